import { Readable, Transform } from 'node:stream';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { egressOpen, type EgressPolicy } from '../common/net/egress.js';
import { currentSubject } from '../outbound-auth/caller-context.js';
import { sendWithCredential, type Credential } from '../outbound-auth/credentials.js';

/** A larger single response (a JSON reply, one SSE stream) is cut: the SDK then sees a broken stream. */
const MAX_RESPONSE = 8 * 1024 * 1024;
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for the SDK's streamable-HTTP client that goes through the
 * egress guard (SSRF checks, pinned addresses, each redirect re-checked)
 * and streams the body (the transport reads server-sent events as they
 * come). The configured headers and the server's credential (`auth`:
 * headers, a TLS client certificate; a refused OAuth token renewed once) go
 * to the server's own origin only; the response head must arrive within
 * `timeoutMs`.
 */
export function mcpFetch(
  policy: EgressPolicy,
  headers: Record<string, string>,
  credential: Credential,
  origin: string,
  timeoutMs: number,
): FetchLike {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input.href;
    const sent: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => {
      if (k !== 'authorization' && k !== 'cookie') sent[k] = v;
    });
    const own = new URL(url).origin === origin;
    if (own) Object.assign(sent, lower(headers));
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') throw new TypeError(`method ${method}`);
    const signal = init?.signal ?? undefined;
    const res = await sendWithCredential(
      credential,
      { signal, subject: currentSubject() },
      own,
      (extra, tls) =>
        egressOpen(url, policy, {
          method,
          headers: { ...sent, ...extra },
          body: typeof init?.body === 'string' ? init.body : undefined,
          signal,
          timeoutMs,
          ...(tls ? { tls } : {}),
        }),
      (refused) => refused.body.resume(),
    );
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
    }
    if (NO_BODY.has(res.status)) {
      res.body.resume();
      return new Response(null, { status: res.status, headers: out });
    }
    let size = 0;
    const capped = res.body.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          size += chunk.length;
          if (size > MAX_RESPONSE) {
            res.body.destroy();
            done(new Error('the response is larger than 8 MiB'));
            return;
          }
          done(null, chunk);
        },
      }),
    );
    res.body.once('error', (err) => capped.destroy(err));
    return new Response(Readable.toWeb(capped) as ReadableStream<Uint8Array>, { status: res.status, headers: out });
  };
}

function lower(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}
