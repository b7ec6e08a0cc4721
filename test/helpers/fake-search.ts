import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SearchRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
}

/**
 * A fake search provider on 127.0.0.1 speaking the real wire formats:
 * SearXNG (`GET /search?q=…&format=json`), Brave (`GET /res/v1/web/search`,
 * `X-Subscription-Token`) and Tavily (`POST /search`, bearer key, JSON body).
 * The query picks the behaviour: `boom` → 500, `slow` → no answer at all, `mirror` → titles quoting the key,
 * `garbage` → not JSON, `nothing` → no results; Brave and Tavily answer 401
 * to any key but `key`. Result URLs point back here under `/never`, which
 * counts requests (nothing may fetch them).
 */
export class FakeSearch {
  private server!: Server;
  url = '';
  requests: SearchRequest[] = [];
  neverFetched = 0;

  constructor(private readonly key = 'fake-search-key-0001') {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void (async () => {
        let raw = '';
        for await (const c of req) raw += String(c);
        const u = new URL(req.url ?? '/', 'http://x');
        if (u.pathname.startsWith('/never')) {
          this.neverFetched++;
          res.end('no');
          return;
        }
        const body = raw ? JSON.parse(raw) : undefined;
        this.requests.push({
          method: req.method ?? '',
          path: u.pathname,
          query: u.searchParams,
          headers: req.headers,
          body,
        });
        const brave = u.pathname === '/res/v1/web/search';
        const tavily = req.method === 'POST' && u.pathname === '/search';
        const q: string = tavily ? body.query : (u.searchParams.get('q') ?? '');
        if (brave && req.headers['x-subscription-token'] !== this.key) return json(res, 401, { error: 'bad token' });
        if (tavily && req.headers.authorization !== `Bearer ${this.key}`)
          return json(res, 401, { detail: 'Unauthorized' });
        if (!brave && !tavily && u.searchParams.get('format') !== 'json') return json(res, 403, {});
        if (q === 'boom') return json(res, 500, { error: 'boom' });
        if (q === 'slow') return; // never answers: the client's timeout ends it (stop() closes what is left)
        if (q === 'garbage') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json');
          return;
        }
        const n = q === 'nothing' ? 0 : 3;
        // `mirror`: the results quote the key the request carried (a provider echoing its request).
        const sent = String(req.headers['x-subscription-token'] ?? req.headers.authorization ?? '');
        const hits = Array.from({ length: n }, (_, i) => ({
          title: q === 'mirror' ? `you sent ${sent}` : `Result ${i + 1} for ${q}`,
          url: `${this.url}/never/${i + 1}`,
          text: `Snippet <strong>${i + 1}</strong> about ${q}`,
        }));
        if (brave) {
          return json(res, 200, {
            type: 'search',
            query: { original: q },
            ...(n
              ? {
                  web: {
                    type: 'search',
                    results: hits.map((h) => ({ title: h.title, url: h.url, description: h.text })),
                  },
                }
              : {}),
          });
        }
        if (tavily) {
          return json(res, 200, {
            query: q,
            results: hits.map((h, i) => ({ title: h.title, url: h.url, content: h.text, score: 0.9 - i / 10 })),
            response_time: 0.1,
          });
        }
        return json(res, 200, {
          query: q,
          number_of_results: n,
          results: hits.map((h) => ({ title: h.title, url: h.url, content: h.text, engine: 'fake', score: 1 })),
          answers: [],
          suggestions: [],
        });
      })();
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

function json(res: import('node:http').ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
