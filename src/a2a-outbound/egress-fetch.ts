import { MAX_JSON_DEPTH, parseJsonText, tooDeepAt } from '../common/json-guard.js';
import { egressRequest, type EgressPolicy } from '../common/net/egress.js';
import { currentSubject } from '../outbound-auth/caller-context.js';
import { sendWithCredential, type Credential } from '../outbound-auth/credentials.js';
import { egressStreamFetch, eventTooDeep, SseEventData } from './egress-stream.js';

/** Why a remote call failed, in the seed's failure vocabulary. */
export class RemoteCallError extends Error {
  constructor(
    readonly kind: 'http' | 'malformed',
    message: string,
  ) {
    super(message);
    this.name = 'RemoteCallError';
  }
}

const MAX_RESPONSE = 4 * 1024 * 1024;
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for the SDK's client that goes through the egress guard (SSRF
 * checks, pinned addresses, re-checked redirects), sends only the remote's
 * own credential (`auth` of its entry: headers, a TLS client certificate),
 * to its own origin only (whatever the caller set), renews a refused OAuth
 * token once, and turns an HTTP error status without an A2A error body (a
 * JSON-RPC error, or HTTP+JSON's `google.rpc.Status` with an `ErrorInfo`)
 * into a `RemoteCallError`; the SDK reads an A2A error as its typed error. `optional`: a card fetch, sent without
 * credentials when they act for a caller and there is none.
 */
export function egressFetch(
  policy: EgressPolicy,
  credential: Credential | undefined,
  timeoutMs: number,
  origin: string,
  optional = false,
): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => {
      if (k !== 'authorization' && k !== 'cookie') headers[k] = v;
    });
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const method = (init?.method ?? 'GET').toUpperCase();
    const signal = init?.signal ?? undefined;
    if (/text\/event-stream/i.test(headers.accept ?? '')) {
      // A stream: handed over as it arrives (the remote-backed agent's follower reads each event when sent).
      return egressStreamFetch(
        policy,
        credential,
        timeoutMs,
        url,
        sameOrigin(url, origin),
        { method: method === 'POST' ? 'POST' : 'GET', headers, body, signal },
        {
          malformed: (message) => new RemoteCallError('malformed', message),
          refusal: (status, b) =>
            status >= 400 && !isA2aError(b)
              ? new RemoteCallError('http', `HTTP ${status}: ${statusText(status)}`)
              : null,
        },
      );
    }
    // The remote's credential goes only to the remote's own origin (not to another origin its card names).
    const res = await sendWithCredential(
      credential,
      { signal, subject: currentSubject() },
      sameOrigin(url, origin),
      (extra, tls) =>
        egressRequest(url, policy, {
          method: method === 'POST' ? 'POST' : 'GET',
          headers: { ...headers, ...extra },
          body,
          signal,
          timeoutMs,
          maxBytes: MAX_RESPONSE,
          ...(tls ? { tls } : {}),
        }),
      () => undefined,
      optional,
    );
    if (res.truncated) throw new RemoteCallError('malformed', 'the response is larger than 4 MiB');
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
    }
    if (tooDeep(res.body, out.get('content-type') ?? '')) {
      throw new RemoteCallError('malformed', `the response is nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    if (res.status >= 400 && !isA2aError(res.body)) {
      throw new RemoteCallError('http', `HTTP ${res.status}: ${statusText(res.status)}`);
    }
    return new Response(NO_BODY.has(res.status) ? null : new Uint8Array(res.body), {
      status: res.status,
      headers: out,
    });
  };
}

function sameOrigin(url: string, origin: string): boolean {
  try {
    return new URL(url).origin === origin;
  } catch {
    return false;
  }
}

/**
 * Whether a remote's JSON (a body, or each event's data of an event stream,
 * its `data:` lines joined as the SDK joins them) nests deeper than we take:
 * the SDK parses it with `JSON.parse`, whose cost on deep nesting is far from
 * linear, in the thread every tenant shares.
 */
function tooDeep(body: Buffer, contentType: string): boolean {
  const text = body.toString('utf8');
  if (!contentType.toLowerCase().startsWith('text/event-stream')) return tooDeepAt(text) !== -1;
  const events = new SseEventData();
  return text.split('\n').some((line) => eventTooDeep(events.line(line))) || eventTooDeep(events.end());
}

function isA2aError(body: Buffer): boolean {
  try {
    const j = parseJsonText(body.toString('utf8')) as { jsonrpc?: unknown; error?: unknown };
    if (j.error === null || typeof j.error !== 'object') return false;
    if (j.jsonrpc === '2.0') return true;
    const details = (j.error as { details?: unknown }).details;
    return (
      Array.isArray(details) &&
      details.some(
        (d: { '@type'?: unknown; reason?: unknown } | null) =>
          d?.['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo' && typeof d.reason === 'string',
      )
    );
  } catch {
    return false;
  }
}

function statusText(status: number): string {
  switch (status) {
    case 401:
      return 'unauthorized (no token, or the remote rejected it)';
    case 403:
      return 'forbidden';
    case 404:
      return 'not found';
    case 413:
      return 'payload too large';
    case 429:
      return 'rate limited';
    case 502:
    case 503:
    case 504:
      return 'remote unavailable';
    default:
      return status >= 500 ? 'remote error' : 'request refused';
  }
}
