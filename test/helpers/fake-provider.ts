import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PATIENCE_MS } from './patience.js';

/**
 * A fake model provider: a real HTTP server on loopback speaking the
 * OpenAI Chat Completions and Anthropic Messages streaming wire formats.
 * The last user message picks the behaviour:
 *   `say <text>`     stream <text> back word by word, with usage
 *   `flaky <text>`   429 on the first attempt, then like `say`
 *   `crash`          one chunk, then the connection is destroyed
 *   `garbage`        a malformed chunk
 *   `deny`           401 with a body that echoes a key
 *   `slow`           a chunk every 100 ms until the client goes away (for cancellation; at most `PATIENCE_MS`)
 * Scripted models (below) can also misbehave: cut a stream off, answer with
 * any status and headers (a 429 with each form of Retry-After), and so on.
 */
export interface ScriptCall {
  model: string;
  system: string;
  messages: { role: string; content: string }[];
  /** The last message's content. */
  last: string;
  /** 1 for this model's first request, 2 for the next … */
  call: number;
}

/** A scripted reply: the text to stream, optionally slowly or failing after some text. */
export type ScriptReply = string | ScriptedReply;

export interface ScriptedReply {
  text: string;
  /** Pause between chunks (default 2 ms). */
  delayMs?: number;
  /** After the text, destroy the connection (a reset). */
  failAfter?: boolean;
  /**
   * After the text, end the response cleanly but without the stream's end
   * (no `finish_reason` and no `[DONE]`; no `message_stop` for Anthropic): a
   * proxy or provider that closed the stream early.
   */
  cutOff?: boolean;
  /** Answer with this HTTP status and a JSON error body instead of a stream. */
  status?: number;
  /** Headers of a `status` answer (default `retry-after: 0`), e.g. `{ 'retry-after-ms': '1500' }`. */
  headers?: Record<string, string>;
  /** Sends nothing (not even the response head) until this settles: e.g. until every call of a fan-out has arrived. */
  startWhen?: Promise<unknown>;
  /** Sends the first piece, then waits for this before the rest: e.g. until the client has seen that piece. */
  continueWhen?: Promise<unknown>;
  /** Sends every piece, then waits for this before the stream's end (or its reset, its cut-off). */
  endWhen?: Promise<unknown>;
  /**
   * The usage the stream reports (default: 10 input tokens, one output token per piece), as the wire has it —
   * any JSON value, to send garbage — or `none` for a stream that reports no usage. `cached` are part of
   * `input` (OpenAI's `prompt_tokens_details.cached_tokens`; Anthropic's `cache_read_input_tokens`, which it
   * counts apart from `input_tokens`).
   */
  usage?: { input?: unknown; output?: unknown; cached?: unknown } | 'none';
}

export class FakeProvider {
  /**
   * Scripted models: a request for a model named here is answered by the
   * script (as real streamed chunks of the wire format), so tests can make
   * an agent emit slash commands, delegate and so on.
   */
  readonly scripts = new Map<string, (c: ScriptCall) => ScriptReply>();
  private readonly calls = new Map<string, number>();

  private server!: Server;
  url = '';
  requests: { path: string; headers: IncomingMessage['headers']; body: any }[] = [];
  closedEarly = 0;
  private attempts = new Map<string, number>();

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  /** Streams a scripted reply in the wire format, a few characters per chunk. */
  private async scripted(res: ServerResponse, anthropic: boolean, r: ScriptedReply): Promise<void> {
    if (r.startWhen) await r.startWhen;
    if (r.status) {
      res.writeHead(r.status, { 'content-type': 'application/json', ...(r.headers ?? { 'retry-after': '0' }) });
      res.end('{"error":{"message":"scripted failure"}}');
      return;
    }
    let closed = false;
    res.on('close', () => {
      if (!res.writableFinished) {
        closed = true;
        this.closedEarly++;
      }
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string | undefined, data: unknown): void => {
      res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
    };
    const pieces = r.text.match(/[^\n]{1,7}|\n/g) ?? [];
    const u = r.usage === 'none' ? undefined : { input: 10, output: pieces.length, ...r.usage };
    if (anthropic) {
      const cached = typeof u?.cached === 'number' ? u.cached : undefined;
      const input = typeof u?.input === 'number' && cached !== undefined ? u.input - cached : u?.input;
      const usage = u ? { input_tokens: input, output_tokens: 1, cache_read_input_tokens: u.cached } : undefined;
      send('message_start', { type: 'message_start', message: usage ? { usage } : {} });
    }
    for (const [i, piece] of pieces.entries()) {
      if (i === 1 && r.continueWhen) await r.continueWhen;
      if (closed) return;
      if (anthropic) {
        send('content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: piece },
        });
      } else {
        send(undefined, { choices: [{ index: 0, delta: { content: piece } }] });
      }
      await new Promise((resolve) => setTimeout(resolve, r.delayMs ?? 2));
    }
    if (r.endWhen) await r.endWhen;
    if (closed) return;
    if (r.failAfter) {
      res.destroy();
      return;
    }
    if (r.cutOff) {
      res.end();
      return;
    }
    if (anthropic) {
      send('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        ...(u ? { usage: { output_tokens: u.output } } : {}),
      });
      send('message_stop', { type: 'message_stop' });
    } else {
      send(undefined, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      if (u) {
        const details = u.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: u.cached } };
        send(undefined, { choices: [], usage: { prompt_tokens: u.input, completion_tokens: u.output, ...details } });
      }
      res.write('data: [DONE]\n\n');
    }
    res.end();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const c of req) raw += String(c);
    const body = JSON.parse(raw);
    this.requests.push({ path: req.url ?? '', headers: req.headers, body });
    const anthropic = req.url === '/v1/messages';
    const last: string = body.messages[body.messages.length - 1].content;
    const script = this.scripts.get(body.model);
    if (script) {
      const call = (this.calls.get(body.model) ?? 0) + 1;
      this.calls.set(body.model, call);
      const system: string = anthropic ? body.system : body.messages[0].content;
      const messages = (anthropic ? body.messages : body.messages.slice(1)) as { role: string; content: string }[];
      const reply = script({ model: body.model, system, messages, last, call });
      await this.scripted(res, anthropic, typeof reply === 'string' ? { text: reply } : reply);
      return;
    }
    const [verb, ...rest] = last.split(' ');
    const text = rest.join(' ');
    const n = (this.attempts.get(last) ?? 0) + 1;
    this.attempts.set(last, n);
    if (verb === 'deny') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'bad key sk-live-SECRET-123' } }));
      return;
    }
    if (verb === 'redirect') {
      // Somewhere else on the same server: a client that followed would be seen asking there.
      res.writeHead(307, { location: `${this.url}/elsewhere${req.url ?? ''}` });
      res.end();
      return;
    }
    if (verb === 'flaky' && n === 1) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end('{"error":"slow down"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (event: string | undefined, data: unknown): void => {
      res.write(
        `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
      );
    };
    const chunk = (t: string): void =>
      anthropic
        ? send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } })
        : send(undefined, { choices: [{ index: 0, delta: { content: t } }] });
    if (anthropic)
      send('message_start', { type: 'message_start', message: { usage: { input_tokens: 11, output_tokens: 1 } } });
    if (verb === 'quote' && anthropic) {
      // A stream error whose type quotes the key it was sent.
      send('error', { type: 'error', error: { type: `bad key ${String(req.headers['x-api-key'])}` } });
      res.end();
      return;
    }
    if (verb === 'flood') {
      // `flood <n>`: n chunks of 64 KiB at once, then the usual end.
      for (let i = 0; i < Number(rest[0]); i++) chunk('x'.repeat(64 * 1024));
    }
    if (verb === 'crash') {
      chunk('partial ');
      await new Promise((r) => setTimeout(r, 20));
      res.destroy();
      return;
    }
    if (verb === 'garbage') {
      res.write('data: {not json\n\n');
      res.end();
      return;
    }
    if (verb === 'slow') {
      let closed = false;
      res.on('close', () => {
        if (!res.writableFinished) {
          closed = true;
          this.closedEarly++;
        }
      });
      for (let i = 0; i < PATIENCE_MS / 100 && !closed; i++) {
        chunk(`tick${i} `);
        await new Promise((r) => setTimeout(r, 100));
      }
      res.end();
      return;
    }
    const words = text.match(/\S+\s*/g) ?? [];
    for (const w of words) {
      chunk(w);
      await new Promise((r) => setTimeout(r, 5));
    }
    if (anthropic) {
      send('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: words.length },
      });
      send('message_stop', { type: 'message_stop' });
    } else {
      send(undefined, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      send(undefined, { choices: [], usage: { prompt_tokens: 7, completion_tokens: words.length } });
      send(undefined, '[DONE]');
    }
    res.end();
  }
}
