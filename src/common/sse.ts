import type { ServerResponse } from 'node:http';
import { DomainError } from './errors.js';

export interface SseFrame {
  id?: number | string;
  event?: string;
  data: unknown;
}

/** The abort reason when a client goes away: one shared error (a new one per request would capture a stack trace each). */
export const CLIENT_GONE = new Error('client disconnected');

/** SSE responses open in this process (for the metrics). */
export const sseStreams = { open: 0 };

/**
 * Heartbeats of the open streams, one timer per heartbeat period for all of
 * them (not one per stream: thousands of idle subscribers are thousands of
 * timers otherwise). Each beat sends a comment to the streams idle for a period.
 */
const beats = new Map<number, { timer: NodeJS.Timeout; streams: Set<() => void> }>();

function onBeat(periodMs: number, beat: () => void): () => void {
  let group = beats.get(periodMs);
  if (!group) {
    const streams = new Set<() => void>();
    const timer = setInterval(
      () => {
        for (const b of streams) b();
      },
      Math.max(50, Math.floor(periodMs / 2)),
    );
    timer.unref();
    group = { timer, streams };
    beats.set(periodMs, group);
  }
  group.streams.add(beat);
  return () => {
    const g = beats.get(periodMs);
    if (!g) return;
    g.streams.delete(beat);
    if (g.streams.size === 0) {
      clearInterval(g.timer);
      beats.delete(periodMs);
    }
  };
}

/** The most a burst holds before it is written (a long backlog leaves in pieces of about this size). */
const BURST_BYTES = 64 * 1024;

/**
 * No `Connection` header: Node writes `keep-alive`, or `close` when the client asked for it (and then closes the
 * connection once the stream ends), which a `Connection: keep-alive` set here would override.
 */
const SSE_HEADERS = [
  'Content-Type',
  'text/event-stream; charset=utf-8',
  'Cache-Control',
  'no-cache, no-transform',
  'X-Accel-Buffering',
  'no',
];

/**
 * Writes an SSE response from `frames`: an `id:` line when the frame has
 * one, heartbeat comments while idle, and backpressure from the socket.
 * Returns when the frames end or the client goes away (then `abort` fires,
 * so the producer can stop). When the server aborts the stream with a
 * `DomainError` (its access was revoked), `onError` gives the last frame.
 */
export async function writeSse<T = SseFrame>(
  res: ServerResponse,
  frames: AsyncIterable<T>,
  opts: {
    /**
     * Each item as its frame, when the items are not frames already (one async step less per item than a mapping
     * generator); an item it gives no frame for is left out.
     */
    frame?: (item: T) => SseFrame | undefined;
    heartbeatMs: number;
    abort?: AbortController;
    onError?: (err: unknown) => SseFrame | undefined;
    /** More response headers (`name, value …`), when the caller has not set them on `res` already. */
    headers?: readonly string[];
  },
): Promise<void> {
  // What is ready at once — the headers, the task, the events its creation committed with, and the end of a
  // stream that ends then — leaves in one write: the socket is corked until the event loop moves on, not written
  // to frame by frame. The socket, not the response: a corked response buffers its chunks apart and writes each
  // on its own when uncorked (Node 24), and `end()` uncorks the socket with the terminating chunk in the same write.
  // The frames of one burst are one chunk of the response, not one each (each chunk is four pieces on the socket:
  // its length, the frame, two line ends).
  const socket = res.socket;
  let corked = 0;
  let corks = 0;
  let pending = '';
  let closed = false;
  /** The burst's text so far, handed over (and the burst emptied). */
  const take = (): string => {
    const text = pending;
    pending = '';
    return text;
  };
  const flush = (): void => {
    if (!corked) return;
    corked = 0;
    const chunk = take();
    if (chunk && !closed) res.write(chunk);
    socket?.uncork();
  };
  const burst = (): void => {
    if (corked || !socket) return;
    const id = ++corks;
    corked = id;
    socket.cork();
    setImmediate(() => {
      if (corked === id) flush();
    });
  };
  burst();
  res.writeHead(200, opts.headers ? [...opts.headers, ...SSE_HEADERS] : SSE_HEADERS);
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  sseStreams.open++;
  const onClose = (): void => {
    closed = true;
    opts.abort?.abort(CLIENT_GONE);
  };
  res.on('close', onClose);
  let lastWrite = Date.now();
  const stopBeats = onBeat(opts.heartbeatMs, () => {
    if (!closed && Date.now() - lastWrite >= opts.heartbeatMs) send(': keep-alive\n\n');
  });

  /**
   * Adds `text` to the burst (written when the event loop moves on, or now once the burst holds `BURST_BYTES`);
   * false when the socket asks to wait for `drain`.
   */
  const send = (text: string): boolean => {
    lastWrite = Date.now();
    burst();
    pending += text;
    if (corked && pending.length < BURST_BYTES) return !res.writableNeedDrain || closed;
    return res.write(take()) || closed;
  };
  /** Writes the frame; false when the socket asks to wait for `drain`. */
  const write = (frame: SseFrame): boolean => {
    let chunk = '';
    if (frame.id !== undefined) chunk += `id: ${frame.id}\n`;
    if (frame.event) chunk += `event: ${frame.event}\n`;
    return send(`${chunk}data: ${JSON.stringify(frame.data)}\n\n`);
  };
  // Both listeners go once either fires: a race of two `once`s left the loser's behind, one more at every wait.
  const drained = (): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  const toFrame = opts.frame ?? ((item: T) => item as SseFrame);

  try {
    for await (const item of frames) {
      if (closed) break;
      const frame = toFrame(item);
      if (frame && !write(frame)) await drained();
    }
    // Stopped by the server (the stream's access was revoked): the last frame says why.
    const reason: unknown = opts.abort?.signal.reason;
    if (!closed && opts.abort?.signal.aborted && reason instanceof DomainError) {
      const last = opts.onError?.(reason);
      if (last && !write(last)) await drained();
    }
  } catch (err) {
    const last = opts.onError?.(err);
    if (last && !closed && !write(last)) await drained();
  } finally {
    sseStreams.open--;
    stopBeats();
    res.off('close', onClose);
    if (closed) flush();
    else {
      corked = 0; // `end()` uncorks the socket, everything written so far going with it
      const last = take();
      if (last) res.end(last);
      else res.end();
    }
  }
}

/**
 * Starts `writeSse` and returns at once: the stream outlives the request
 * handler, so the framework's per-request pipeline (interceptors, the
 * handler's promise chain) is released while the stream stays open, which
 * matters with thousands of idle subscribers. `done` runs when the stream ends.
 */
export function detachSse<T = SseFrame>(
  res: ServerResponse,
  frames: AsyncIterable<T>,
  opts: Parameters<typeof writeSse<T>>[2],
  done: () => void,
): void {
  writeSse(res, frames, opts)
    .catch(() => {
      // writeSse reports its errors in the stream; anything else ends the connection.
      if (!res.writableEnded) res.destroy();
    })
    .finally(done);
}

/** Calls `release` once the response is closed (ended, or the client went away) — at once if it already is. */
export function releaseOnClose(res: ServerResponse, release: () => void): void {
  if (res.destroyed || res.writableFinished) release();
  else res.once('close', release);
}
