import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PriceBook } from '../../src/usage/price-book.js';
import { accountedCall, callCost, tokenCount } from '../../src/usage/usage-call.js';

const at = (d: string): number => Date.parse(d);

describe('model prices (ARBITER_PRICES_FILE)', () => {
  const book = PriceBook.parse({
    currency: 'EUR',
    prices: [
      { model: 'gpt-4o', input_per_million: 5, output_per_million: 15, effective_until: '2025-01-01' },
      { model: 'gpt-4o', input_per_million: 2.5, output_per_million: 10, effective_from: '2025-01-01' },
      { model: 'openai/gpt-4o', input_per_million: 2, output_per_million: 8, effective_from: '2025-06-01' },
      { model: 'openrouter/*', input_per_million: 1, output_per_million: 1 },
      { model: 'openrouter/meta-llama/*', input_per_million: 0.5, output_per_million: 0.5, cached_per_million: 0 },
    ],
  });

  it('takes the price in force when the call is made: a price change does not rewrite what came before', () => {
    assert.equal(book.lookup('ollama', 'gpt-4o', at('2024-06-01'))?.input, 5);
    assert.equal(book.lookup('ollama', 'gpt-4o', at('2025-01-01'))?.input, 2.5);
    assert.equal(book.lookup('openai', 'gpt-4o', at('2025-03-01'))?.input, 2.5);
    // A provider's own entry beats the any-provider one, once it is in force.
    assert.equal(book.lookup('openai', 'gpt-4o', at('2025-07-01'))?.input, 2);
    assert.equal(book.lookup('openai', 'gpt-4o', at('2025-07-01'))?.currency, 'EUR');
  });

  it('matches patterns, the most specific first; cached tokens default to the input price', () => {
    assert.equal(book.lookup('openrouter', 'meta-llama/llama-3', at('2025-01-01'))?.input, 0.5);
    assert.equal(book.lookup('openrouter', 'mistral/x', at('2025-01-01'))?.input, 1);
    assert.equal(book.lookup('openrouter', 'mistral/x', at('2025-01-01'))?.cached, 1);
    assert.equal(book.lookup('openai', 'gpt-4o-mini', at('2025-01-01')), null);
    assert.equal(PriceBook.empty().lookup('openai', 'gpt-4o', Date.now()), null);
  });

  it('refuses a bad file, naming the entry and the field', () => {
    const bad: [unknown, RegExp][] = [
      [[], /must hold a JSON object/],
      [{ currency: 'USD' }, /prices: must be an array/],
      [{ currency: 'USD', prices: [], extra: 1 }, /extra: unknown field/],
      [
        { currency: 'USD', prices: [{ model: 'a', input_per_million: 1 }] },
        /prices\[0\]: output_per_million: must be a number/,
      ],
      [
        { currency: 'USD', prices: [{ model: 'a', input_per_million: 1, output_per_million: 1, colour: 1 }] },
        /prices\[0\]: colour: unknown field/,
      ],
      [
        { currency: 'USD', prices: [{ model: 'a b', input_per_million: 1, output_per_million: 1 }] },
        /prices\[0\]: model:/,
      ],
      [
        {
          currency: 'USD',
          prices: [{ model: 'a', input_per_million: 1, output_per_million: 1, cached_per_million: 20000 }],
        },
        /prices\[0\]: cached_per_million: must be at most 10000/,
      ],
      [
        {
          currency: 'USD',
          prices: [{ model: 'a', input_per_million: 1, output_per_million: 1, effective_from: '2025-13-45' }],
        },
        /prices\[0\]: effective_from: must be a date/,
      ],
      [
        {
          currency: 'USD',
          prices: [
            {
              model: 'a',
              input_per_million: 1,
              output_per_million: 1,
              effective_from: '2025-02-01',
              effective_until: '2025-01-01',
            },
          ],
        },
        /prices\[0\]: effective_until: must be after effective_from/,
      ],
      [
        {
          currency: 'USD',
          prices: [
            { model: 'a', input_per_million: 1, output_per_million: 1, effective_from: '2025-01-01' },
            { model: 'a', input_per_million: 2, output_per_million: 2, effective_from: '2025-01-01' },
          ],
        },
        /prices\[1\]: effective_from: the period of "a" overlaps that of prices\[0\]/,
      ],
    ];
    for (const [json, message] of bad) assert.throws(() => PriceBook.parse(json), message);
  });

  it('records a bad token count as 0, and costs a call exactly as the ledger does', () => {
    assert.deepEqual([-1, 1.5, NaN, '7', null, 2e9, 42].map(tokenCount), [0, 0, 0, 0, 0, 0, 42]);
    const call = accountedCall(
      { agent: 'a', provider: 'openai', model: 'm', inputTokens: 1000, outputTokens: 200, cachedTokens: 5000 },
      { input: 2, output: 8, cached: 0.5, currency: 'USD' },
    );
    // Cached tokens are part of the input: never more than it.
    assert.equal(call.cached, 1000);
    assert.equal(callCost(call), (1000 * 0.5 + 200 * 8) / 1e6);
    assert.equal(callCost(accountedCall({ ...call, inputTokens: 1, outputTokens: 1, cachedTokens: 0 }, null)), 0);
  });
});
