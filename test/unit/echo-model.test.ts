import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chunkText, EchoProvider } from '../../src/orchestrator/providers/echo.model.js';
import type { CompletionEvent, CompletionRequest } from '../../src/orchestrator/providers/provider.js';

const request = (text: string): CompletionRequest => ({
  model: 'echo',
  system: 'You are a test.',
  messages: [
    { role: 'user', content: 'an earlier question' },
    { role: 'assistant', content: 'an earlier answer' },
    { role: 'user', content: text },
  ],
  maxTokens: 100,
  temperature: 0,
});

async function streamed(p: EchoProvider, req: CompletionRequest): Promise<CompletionEvent[]> {
  const out: CompletionEvent[] = [];
  for await (const ev of p.complete(req, new AbortController().signal)) out.push(ev);
  return out;
}

describe('echo model', () => {
  it('gives at once, whole, what it streams', async () => {
    for (const text of ['the quick brown fox jumps over the lazy dog', '', '  spaced   out  ', 'one']) {
      for (const chunks of [1, 4, 16]) {
        const p = new EchoProvider({ chunks, delayMs: 0 });
        assert.equal(p.immediate, true);
        const whole = p.answer(request(text));
        assert.deepEqual(whole, await streamed(p, request(text)));
        assert.equal(
          whole.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join(''),
          text,
          'the chunks are the text',
        );
        assert.deepEqual(whole.at(-1), { type: 'stop', reason: 'end_turn' });
      }
    }
  });

  it('chunks on the words of /\\S+\\s*|\\s+/g, every UTF-16 code unit classed as the regex classes it', () => {
    // The words as the regex finds them, taken ceil(words / n) at a time.
    const reference = (text: string, n: number): string[] => {
      if (text.length === 0) return [''];
      const words = text.match(/\S+\s*|\s+/g) ?? [text];
      const per = Math.max(1, Math.ceil(words.length / n));
      const out: string[] = [];
      for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(''));
      return out;
    };
    for (let c = 0; c <= 0xffff; c++) {
      const text = `a${String.fromCharCode(c)}b c`;
      assert.deepEqual(chunkText(text, 3), reference(text, 3), `code unit ${c.toString(16)}`);
    }
    // Random texts of words, runs of assorted spaces and astral characters, cut in 1 to 9 chunks.
    const pieces = ['word', 'x', ' ', '  ', '\t', '\n', '\u00a0', '\u2003', '\u3000', '\ufeff', '😀', 'é', '\u2028'];
    let seed = 7;
    const next = (k: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    for (let t = 0; t < 2000; t++) {
      let text = '';
      for (let k = next(12); k > 0; k--) text += pieces[next(pieces.length)];
      const n = 1 + next(9);
      assert.deepEqual(chunkText(text, n), reference(text, n), JSON.stringify({ text, n }));
    }
  });

  it('with a delay between chunks it is not immediate', () => {
    assert.equal(new EchoProvider({ chunks: 4, delayMs: 5 }).immediate, false);
  });
});
