import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { writeSse, type SseFrame } from '../../src/common/sse.js';

/** The raw bytes of one response, read off the socket until its last chunk (an SSE response keeps the connection). */
async function rawResponse(port: number, path: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  let raw = '';
  socket.setEncoding('latin1');
  for await (const d of socket) {
    raw += d as string;
    if (raw.endsWith('\r\n0\r\n\r\n')) break;
  }
  socket.destroy();
  return raw;
}

/** A chunked body's chunks, in order (the terminating empty chunk left out). */
function chunks(raw: string): string[] {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, eol), 16);
    assert.ok(
      eol > at && Number.isSafeInteger(size),
      `a chunk's size at ${at}: ${JSON.stringify(body.slice(at, at + 40))}`,
    );
    if (size === 0) return out;
    out.push(body.slice(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

async function* ready(frames: SseFrame[]): AsyncGenerator<SseFrame> {
  for (const f of frames) yield f;
}

const frame = (i: number, size = 16): SseFrame => ({ id: i, event: 'message', data: { i, pad: 'x'.repeat(size) } });
const escape = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const text = (f: SseFrame): string => `id: ${f.id}\nevent: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`;

describe('the SSE writer (src/common/sse.ts)', () => {
  let server: Server;
  let port: number;
  const streams = new Map<string, SseFrame[]>();

  before(async () => {
    server = createServer((req, res) => {
      void writeSse(res, ready(streams.get(req.url!) ?? []), { heartbeatMs: 60_000 });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  it('frames ready together leave as one chunk of the response, then the end', async () => {
    const frames = [1, 2, 3, 4, 5].map((i) => frame(i));
    streams.set('/five', frames);
    const raw = await rawResponse(port, '/five');
    assert.match(raw, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(raw, /\r\ncontent-type: text\/event-stream; charset=utf-8\r\n/i);
    assert.deepEqual(chunks(raw), [frames.map(text).join('')]);
  });

  it('a long backlog leaves in pieces of at most 64 KiB and a frame, every frame once and in order', async () => {
    const frames = Array.from({ length: 400 }, (_, i) => frame(i, 1000));
    streams.set('/long', frames);
    const got = chunks(await rawResponse(port, '/long'));
    assert.ok(got.length >= 6, `${got.length} chunks`);
    for (const c of got) assert.ok(c.length <= 64 * 1024 + text(frames[0]).length + 16, `${c.length} bytes`);
    assert.equal(got.join(''), frames.map(text).join(''));
  });

  it('waiting for a slow reader again and again leaves no listeners behind', async () => {
    // 10 MiB to a reader that takes a pause at every piece: the writer waits for `drain` many times.
    const frames = Array.from({ length: 40 }, (_, i) => frame(i, 256 * 1024));
    let after: { close: number; error: number; drain: number } | undefined;
    let waits = 0;
    const s = createServer((_req, res) => {
      const write = res.write.bind(res);
      res.write = ((...args: Parameters<typeof res.write>) => {
        const ok = write(...args);
        if (!ok) waits++;
        return ok;
      }) as typeof res.write;
      void writeSse(res, ready(frames), { heartbeatMs: 60_000 }).then(() => {
        after = {
          close: res.listenerCount('close'),
          error: res.listenerCount('error'),
          drain: res.listenerCount('drain'),
        };
      });
    });
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    try {
      const socket = connect((s.address() as AddressInfo).port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      let tail = '';
      for await (const d of socket) {
        tail = (tail + (d as Buffer).toString('latin1')).slice(-16);
        if (tail.endsWith('\r\n0\r\n\r\n')) break;
        socket.pause();
        await new Promise((r) => setTimeout(r, 2));
        socket.resume();
      }
      socket.destroy();
      assert.ok(waits >= 5, `the writer waited ${waits} times`);
      assert.ok(after, 'the stream ended');
      assert.ok(after.close <= 2 && after.error <= 2 && after.drain === 0, JSON.stringify(after));
    } finally {
      s.close();
    }
  });

  it('frames that come apart in time leave apart, with heartbeats between them when the wait is longer', async () => {
    // The heartbeat's timer (every 50 ms for a 100 ms period) falls due several times in the 430 ms wait.
    async function* slow(): AsyncGenerator<SseFrame> {
      yield frame(1);
      await new Promise((r) => setTimeout(r, 430));
      yield frame(2);
    }
    const s = createServer((_req, res) => void writeSse(res, slow(), { heartbeatMs: 100 }));
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    try {
      const got = chunks(await rawResponse((s.address() as AddressInfo).port, '/'));
      // The first frame left before the wait, alone; then heartbeats, then the last frame (in one chunk with a
      // heartbeat that fell due at the same turn of the event loop, if one did).
      assert.equal(got[0], text(frame(1)));
      assert.match(got.slice(1).join(''), new RegExp(`^(: keep-alive\n\n)+${escape(text(frame(2)))}$`));
    } finally {
      s.close();
    }
  });
});
