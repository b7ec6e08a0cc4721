import type { IncomingMessage } from 'node:http';
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
  return new Response(checkedEvents(res.body, fail), { status: res.status, headers: out });
}

/**
 * The event stream's body as the SDK reads it (a web stream), each chunk as it arrives, checked on the way: a
 * line within 4 MiB, the JSON of a `data:` line within the nesting limit; else the response is cut and the
 * stream ends with the error. Read straight from the response, paused while the reader has a chunk unread.
 */
function checkedEvents(body: IncomingMessage, fail: StreamFailure): ReadableStream<Uint8Array> {
  // The line being received, decoded as latin1: a byte per character (lengths are bytes), and every byte that
  // matters to the checks (a line end, brackets, quotes, backslashes) is ASCII, never part of a UTF-8 sequence.
  let line = '';
  let over = false;
  /** The stream's problem with `chunk`, or null. */
  const check = (chunk: Buffer): Error | null => {
    const text = chunk.toString('latin1');
    for (let at = 0; ;) {
      const end = text.indexOf('\n', at);
      if (end === -1) {
        line = line ? line + text.slice(at) : text.slice(at);
        break;
      }
      const l = line ? line + text.slice(at, end) : text.slice(at, end);
      line = '';
      at = end + 1;
      if (l.startsWith('data:') && tooDeepAt(l) !== -1) {
        return fail.malformed(`an event of the stream is nested deeper than ${MAX_JSON_DEPTH} levels`);
      }
    }
    return line.length > MAX_LINE ? fail.malformed('an event of the stream is larger than 4 MiB') : null;
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const stop = (err: Error | null): void => {
        if (over) return;
        over = true;
        body.off('data', onData);
        if (err) controller.error(err);
        else controller.close();
      };
      const onData = (chunk: Buffer): void => {
        if (over) return;
        const problem = check(chunk);
        if (problem) {
          body.destroy();
          stop(problem);
          return;
        }
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) body.pause();
      };
      body.on('data', onData);
      body.once('end', () => stop(null));
      body.once('error', (err) => stop(err));
      // Closed before its end (the connection dropped, the call aborted): an error, not a stream that ended.
      body.once('close', () => stop(body.readableEnded ? null : new Error('the stream closed before its end')));
    },
    pull() {
      if (!over) body.resume();
    },
    cancel() {
      over = true;
      body.destroy();
    },
  });
}
