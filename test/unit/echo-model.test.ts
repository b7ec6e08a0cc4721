import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EchoProvider } from '../../src/orchestrator/providers/echo.model.js';
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

  it('with a delay between chunks it is not immediate', () => {
    assert.equal(new EchoProvider({ chunks: 4, delayMs: 5 }).immediate, false);
  });
});
