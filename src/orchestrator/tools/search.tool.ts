import type { AppConfig, SearchProviderName } from '../../config/app-config.js';
import { parseJsonText } from '../../common/json-guard.js';
import { stripKnownSecrets } from '../../outbound-auth/credentials.js';

/** One search hit as every provider's answer is reduced to. */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** Why a provider's answer could not be used; `message` never holds a key. */
export class SearchError extends Error {}

/**
 * A web search provider. Its base URL is operator configuration, trusted
 * like `DATABASE_URL` (an in-cluster SearXNG on a private address works),
 * so requests do not go through the egress guard; result URLs are never
 * fetched here (only `/fetch` reaches them, through the guard).
 */
export interface SearchProvider {
  readonly name: SearchProviderName;
  /** Its key, to take out of what it answers (a provider may quote the request back). */
  readonly secrets: readonly string[];
  search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]>;
}

const MAX_RESPONSE = 2 * 1024 * 1024;
const MAX_QUERY = 400;

const clean = (s: unknown, max: number): string => {
  const t =
    typeof s === 'string'
      ? s
          .replace(/<[^>]{0,200}>/g, '')
          .replace(/\s+/g, ' ')
          .trim()
      : '';
  return t.length > max ? `${t.slice(0, max)}…` : t;
};

/** GET or POST `url` and parse JSON, mapping every failure to a key-free `SearchError`. */
async function getJson(
  provider: SearchProviderName,
  url: URL,
  init: { method?: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  timeoutMs: number,
  signal: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.any([signal, timeout]) });
  } catch (err) {
    signal.throwIfAborted();
    if (timeout.aborted) throw new SearchError(`${provider} did not answer within ${Math.round(timeoutMs / 1000)} s`);
    const code = ((err as { cause?: { code?: unknown } }).cause?.code as string | undefined) ?? 'connection failed';
    throw new SearchError(`${provider} unreachable (${code})`);
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw new SearchError(`${provider} rejected the credentials (HTTP ${res.status})`);
  }
  if (res.status === 429) {
    await res.body?.cancel();
    throw new SearchError(`${provider} rate limit reached (HTTP 429)`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new SearchError(`${provider} answered HTTP ${res.status}`);
  }
  let text: string;
  try {
    text = await readCapped(res, MAX_RESPONSE);
  } catch {
    signal.throwIfAborted();
    throw new SearchError(`${provider} sent a malformed response`);
  }
  try {
    return parseJsonText(text);
  } catch {
    throw new SearchError(`${provider} sent a malformed response (not JSON)`);
  }
}

async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > max) throw new Error('too large'); // leaving the loop cancels the body
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Reads `list` (an array of objects) with the field names of one provider. */
function results(
  provider: SearchProviderName,
  list: unknown,
  fields: { title: string; url: string; snippet: string },
): SearchResult[] {
  if (!Array.isArray(list)) throw new SearchError(`${provider} sent a malformed response (no result list)`);
  return list
    .filter(isObj)
    .map((r) => ({
      title: clean(r[fields.title], 300),
      url: clean(r[fields.url], 2000),
      snippet: clean(r[fields.snippet], 500),
    }))
    .filter((r) => /^https?:\/\//i.test(r.url));
}

/** SearXNG's JSON API: `GET /search?q=…&format=json` (the instance must enable the json format). */
class SearxngProvider implements SearchProvider {
  readonly name = 'searxng' as const;
  readonly secrets = [];
  constructor(
    private readonly base: string,
    private readonly timeoutMs: number,
  ) {}

  async search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]> {
    const url = new URL(`${this.base.replace(/\/+$/, '')}/search`);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    const body = await getJson(this.name, url, { headers: { accept: 'application/json' } }, this.timeoutMs, signal);
    if (!isObj(body)) throw new SearchError('searxng sent a malformed response (no result list)');
    return results(this.name, body.results, { title: 'title', url: 'url', snippet: 'content' }).slice(0, count);
  }
}

/** Brave Search API: `GET /res/v1/web/search?q=…&count=…` with `X-Subscription-Token`. */
class BraveProvider implements SearchProvider {
  readonly name = 'brave' as const;
  readonly secrets: readonly string[];
  constructor(
    private readonly base: string,
    private readonly key: string,
    private readonly timeoutMs: number,
  ) {
    this.secrets = [key];
  }

  async search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]> {
    const url = new URL(`${this.base.replace(/\/+$/, '')}/res/v1/web/search`);
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(count));
    const body = await getJson(
      this.name,
      url,
      { headers: { accept: 'application/json', 'x-subscription-token': this.key } },
      this.timeoutMs,
      signal,
    );
    if (!isObj(body)) throw new SearchError('brave sent a malformed response (no result list)');
    if (body.web === undefined) return []; // Brave leaves `web` out when nothing matched
    if (!isObj(body.web)) throw new SearchError('brave sent a malformed response (no result list)');
    return results(this.name, body.web.results, { title: 'title', url: 'url', snippet: 'description' }).slice(0, count);
  }
}

/** Tavily's search API: `POST /search` with a bearer key and `{ query, max_results }`. */
class TavilyProvider implements SearchProvider {
  readonly name = 'tavily' as const;
  readonly secrets: readonly string[];
  constructor(
    private readonly base: string,
    private readonly key: string,
    private readonly timeoutMs: number,
  ) {
    this.secrets = [key];
  }

  async search(query: string, count: number, signal: AbortSignal): Promise<SearchResult[]> {
    const url = new URL(`${this.base.replace(/\/+$/, '')}/search`);
    const body = await getJson(
      this.name,
      url,
      {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          authorization: `Bearer ${this.key}`,
        },
        body: JSON.stringify({ query, max_results: count, search_depth: 'basic' }),
      },
      this.timeoutMs,
      signal,
    );
    if (!isObj(body)) throw new SearchError('tavily sent a malformed response (no result list)');
    return results(this.name, body.results, { title: 'title', url: 'url', snippet: 'content' }).slice(0, count);
  }
}

/** The configured provider (`ARBITER_SEARCH_PROVIDER`, else the first configured), or undefined. */
export function searchProvider(config: AppConfig): SearchProvider | undefined {
  const t = config.searchTimeoutMs;
  switch (config.activeSearchProvider) {
    case 'searxng':
      return config.searxngUrl ? new SearxngProvider(config.searxngUrl, t) : undefined;
    case 'brave':
      return config.braveApiKey ? new BraveProvider(config.braveBaseUrl, config.braveApiKey, t) : undefined;
    case 'tavily':
      return config.tavilyApiKey ? new TavilyProvider(config.tavilyBaseUrl, config.tavilyApiKey, t) : undefined;
    case undefined:
      return undefined;
  }
}

/**
 * `/search <query>`: the top results as numbered title, URL and snippet
 * lines. Returns the tool result body (an `ERR:` line on failure).
 */
export async function searchAsText(
  query: string,
  provider: SearchProvider | undefined,
  count: number,
  signal: AbortSignal,
): Promise<string> {
  const q = query.replace(/\s+/g, ' ').trim();
  if (!q) return 'ERR: usage: /search <query>';
  if (q.length > MAX_QUERY) return `ERR: a query may be at most ${MAX_QUERY} characters`;
  if (!provider) return 'ERR: no search provider configured';
  let found: SearchResult[];
  try {
    found = await provider.search(q, count, signal);
  } catch (err) {
    signal.throwIfAborted();
    if (err instanceof SearchError) return `ERR: search failed: ${err.message}`;
    return `ERR: search failed: ${provider.name} sent a malformed response`;
  }
  if (found.length === 0) return `no results for "${q}" (${provider.name})`;
  const lines = found.map(
    (r, i) => `${i + 1}. ${r.title || r.url}\n   ${r.url}${r.snippet ? `\n   ${r.snippet}` : ''}`,
  );
  const text = `${found.length} result${found.length === 1 ? '' : 's'} from ${provider.name} for "${q}":\n\n${lines.join('\n\n')}`;
  return stripKnownSecrets(text, provider.secrets);
}
