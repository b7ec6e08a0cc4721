import { Readable, Transform } from 'node:stream';
import { egressOpen, type EgressPolicy } from '../common/net/egress.js';
import { MAX_JSON_DEPTH, tooDeepAt } from '../common/json-guard.js';
import { currentSubject } from '../outbound-auth/caller-context.js';
import { sendWithCredential, type Credential } from '../outbound-auth/credentials.js';

/** The longest line of an event stream (one event's data) taken; the whole stream is bounded by its caller's timeouts. */
const MAX_LINE = 4 * 1024 * 1024;
const MAX_ERROR_BODY = 64 * 1024;

/** How a streamed response fails, in the caller's vocabulary: a malformed stream, a refusal (null: none). */
export interface StreamFailure {
  malformed(message: string): Error;
  refusal(status: number, body: Buffer): Error | null;
}

/**
 * A streaming request (`Accept: text/event-stream`: SendStreamingMessage, SubscribeToTask) through the egress
 * guard, its body handed to the SDK as it arrives — each event when the remote sends it, not when the stream
 * ends. The same credential rule as `egressFetch`; each line within 4 MiB and its JSON within the nesting limit,
 * else the stream ends with an error. `timeoutMs` bounds the wait for the response head only.
 */
export async function egressStreamFetch(
  policy: EgressPolicy,
  credential: Credential | undefined,
  timeoutMs: number,
  url: string,
  own: boolean,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  fail: StreamFailure,
): Promise<Response> {
  const res = await sendWithCredential(
    credential,
    { signal: init.signal, subject: currentSubject() },
    own,
    (extra, tls) =>
      egressOpen(url, policy, {
        method: init.method,
        headers: { ...init.headers, ...extra },
        body: init.body,
        signal: init.signal,
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
  const type = out.get('content-type') ?? '';
  if (res.status >= 400 || !type.toLowerCase().startsWith('text/event-stream')) {
    // Not a stream (an error, or a JSON-RPC error body): read it whole, bounded, and let the caller judge it.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res.body as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > MAX_ERROR_BODY) {
        res.body.destroy();
        throw fail.malformed('the response is too large');
      }
      chunks.push(c);
    }
    const body = Buffer.concat(chunks);
    const refused = fail.refusal(res.status, body);
    if (refused) throw refused;
    return new Response(new Uint8Array(body), { status: res.status, headers: out });
  }
  let line = '';
  const checked = res.body.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        const text = chunk.toString('utf8');
        const lines = (line + text).split('\n');
        line = lines.pop() ?? '';
        if (line.length > MAX_LINE) {
          res.body.destroy();
          done(fail.malformed('an event of the stream is larger than 4 MiB'));
          return;
        }
        for (const l of lines) {
          if (l.startsWith('data:') && tooDeepAt(l) !== -1) {
            res.body.destroy();
            done(fail.malformed(`an event of the stream is nested deeper than ${MAX_JSON_DEPTH} levels`));
            return;
          }
        }
        done(null, chunk);
      },
    }),
  );
  res.body.once('error', (err) => checked.destroy(err));
  return new Response(Readable.toWeb(checked) as ReadableStream<Uint8Array>, { status: res.status, headers: out });
}
