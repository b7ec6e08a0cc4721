import { setTimeout as sleep } from 'node:timers/promises';
import type { RunEvent, RunInput } from '../run-event.js';
import type { CompletionEvent, CompletionRequest, Provider } from './provider.js';

/** Whether a UTF-16 code unit is one of JavaScript's `\s` (white space or a line terminator). */
function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Whether a word starts at `i`: the first character, or one that is not space after one that is. */
const startsWord = (text: string, i: number): boolean =>
  i === 0 || (!isSpace(text.charCodeAt(i)) && isSpace(text.charCodeAt(i - 1)));

/**
 * Splits text into about `n` chunks on word boundaries (at least one chunk): its words (what
 * `/\S+\s*|\s+/g` matches: each with the space after it, and the space before the first) taken
 * `ceil(words / n)` at a time. The chunks are slices of the text, found in two scans of it.
 */
export function chunkText(text: string, n: number): string[] {
  if (text.length === 0) return [''];
  let words = 0;
  for (let i = 0; i < text.length; i++) if (startsWord(text, i)) words++;
  const per = Math.max(1, Math.ceil(words / n));
  const chunks: string[] = [];
  let from = 0;
  for (let i = 1, word = 1; i < text.length; i++) {
    if (!startsWord(text, i)) continue;
    if (word % per === 0) {
      chunks.push(text.slice(from, i));
      from = i;
    }
    word++;
  }
  chunks.push(text.slice(from));
  return chunks;
}

export interface EchoOptions {
  chunks: number;
  delayMs: number;
}

/**
 * The offline `echo` model: a placeholder for a real model that streams the
 * input back in several chunks. Two control words exist for tests and demos:
 * `hold` keeps the turn working until it is canceled or continued (the
 * continuation is then echoed), and `ask` ends the turn in input-required.
 */
export async function* echoTurn(
  inputs: AsyncIterator<RunInput>,
  first: RunInput,
  signal: AbortSignal,
  opts: EchoOptions,
): AsyncGenerator<RunEvent> {
  let input = first;
  let inputTokens = 0;
  for (;;) {
    const text = input.text.trim();
    inputTokens += Math.ceil(input.text.length / 4);
    if (text === 'hold') {
      // Wait for a continuation or for cancellation, whichever comes first.
      const next = await Promise.race([
        inputs.next(),
        new Promise<never>((_, reject) => {
          const fail = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
          if (signal.aborted) fail();
          signal.addEventListener('abort', fail, { once: true });
        }),
      ]);
      if (next.done) throw new Error('input stream ended while holding');
      input = next.value;
      continue;
    }
    if (text === 'ask') {
      yield { type: 'usage', inputTokens, outputTokens: 0 };
      yield { type: 'input_required', prompt: 'What should I echo? Send it as the next message of this task.' };
      return;
    }
    let out = '';
    for (const chunk of chunkText(input.text, opts.chunks)) {
      if (opts.delayMs > 0) await sleep(opts.delayMs, undefined, { signal });
      signal.throwIfAborted();
      out += chunk;
      yield { type: 'text', delta: chunk };
    }
    yield { type: 'usage', inputTokens, outputTokens: Math.ceil(out.length / 4) };
    yield { type: 'done', content: out };
    return;
  }
}

/**
 * `echo` as a provider, for the turn loop: streams the last user message
 * back. A slash command in the input is therefore echoed and run, so the
 * tools can be tried without a model.
 */
export class EchoProvider implements Provider {
  readonly name = 'echo';
  readonly baseUrl = 'offline';

  constructor(private readonly opts: EchoOptions) {}

  /** Whether the answer comes at once (no delay between chunks): then `answer` gives it whole. */
  get immediate(): boolean {
    return this.opts.delayMs <= 0;
  }

  /** The whole answer at once, in the order `complete` streams it: no promise per chunk. */
  answer(req: CompletionRequest): CompletionEvent[] {
    const last = req.messages[req.messages.length - 1]?.content ?? '';
    const events: CompletionEvent[] = chunkText(last, this.opts.chunks).map((delta) => ({ type: 'text', delta }));
    events.push(
      { type: 'usage', inputTokens: inputTokensOf(req), outputTokens: Math.ceil(last.length / 4) },
      { type: 'stop', reason: 'end_turn' },
    );
    return events;
  }

  async *complete(req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const last = req.messages[req.messages.length - 1]?.content ?? '';
    for (const chunk of chunkText(last, this.opts.chunks)) {
      if (this.opts.delayMs > 0) await sleep(this.opts.delayMs, undefined, { signal });
      signal.throwIfAborted();
      yield { type: 'text', delta: chunk };
    }
    yield { type: 'usage', inputTokens: inputTokensOf(req), outputTokens: Math.ceil(last.length / 4) };
    yield { type: 'stop', reason: 'end_turn' };
  }
}

const inputTokensOf = (req: CompletionRequest): number =>
  Math.ceil((req.system.length + req.messages.reduce((n, m) => n + m.content.length, 0)) / 4);
