import type { IncomingMessage } from 'node:http';
import { egressOpen, type EgressPolicy } from '../common/net/egress.js';
import { MAX_JSON_DEPTH, tooDeepAt } from '../common/json-guard.js';
import { currentSubject } from '../outbound-auth/caller-context.js';
import { sendWithCredential, type Credential } from '../outbound-auth/credentials.js';

/** The longest line, and event data, of an event stream taken; the whole stream is bounded by its caller's timeouts. */
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
 * ends. The same credential rule as `egressFetch`; each line and event within 4 MiB, an event's JSON within the nesting limit,
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
 * The data of each event of an event stream, as a client gathers it before parsing it: its `data:` lines (the
 * optional space after the colon dropped), one line end between; an event ends at a blank line, or with the
 * stream. Fed complete lines (a line end is `\n`, an `\r` before it dropped).
 */
export class SseEventData {
  private data: string | undefined;

  /** Takes a line; the data of the event it ends (a blank line ends one), else undefined. */
  line(text: string): string | undefined {
    const l = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (l === '') return this.end();
    if (l.startsWith('data:')) {
      const value = l.startsWith(' ', 5) ? l.slice(6) : l.slice(5);
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    }
    return undefined;
  }

  /** The data gathered so far of the event not yet ended. */
  get pending(): number {
    return this.data?.length ?? 0;
  }

  /** Ends the event being gathered (the stream ended); its data, if any. */
  end(): string | undefined {
    const d = this.data;
    this.data = undefined;
    return d;
  }
}

/** Whether an event's data (`SseEventData`) nests deeper than we take: the SDK parses it with `JSON.parse`. */
export const eventTooDeep = (data: string | undefined): boolean => data !== undefined && tooDeepAt(data) !== -1;

/**
 * The event stream's body as the SDK reads it (a web stream), each chunk as it arrives, checked on the way: a
 * line and an event's data within 4 MiB, an event's JSON within the nesting limit (checked when the event ends,
 * before the chunk that ends it is passed on: the SDK parses an event only then); else the response is cut and
 * the stream ends with the error. Read straight from the response, paused while the reader has a chunk unread.
 */
function checkedEvents(body: IncomingMessage, fail: StreamFailure): ReadableStream<Uint8Array> {
  // The line being received, decoded as latin1: a byte per character (lengths are bytes), and every byte that
  // matters to the checks (a line end, brackets, quotes, backslashes) is ASCII, never part of a UTF-8 sequence.
  let line = '';
  const events = new SseEventData();
  let over = false;
  const tooLarge = (): Error => fail.malformed('an event of the stream is larger than 4 MiB');
  const tooDeep = (): Error => fail.malformed(`an event of the stream is nested deeper than ${MAX_JSON_DEPTH} levels`);
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
      if (l.length > MAX_LINE) return tooLarge();
      if (eventTooDeep(events.line(l))) return tooDeep();
      if (events.pending > MAX_LINE) return tooLarge();
    }
    return line.length > MAX_LINE ? tooLarge() : null;
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
      // The SDK parses an event the stream ends without a blank line, too (a last line without its end it drops).
      body.once('end', () => stop(eventTooDeep(events.end()) ? tooDeep() : null));
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
