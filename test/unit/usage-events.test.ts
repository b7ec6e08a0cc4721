import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunEventMapper } from '../../src/tasks/runs/run-event-mapper.js';
import { mergeChunks } from '../../src/tasks/runs/run-writer.js';
import { callsOf } from '../../src/tasks/statements/usage.sql.js';
import { stored } from '../../src/tasks/task-events.js';

const call = (agent: string, input: number) => ({
  agent,
  provider: 'openai',
  model: 'm',
  inputTokens: input,
  outputTokens: 1,
  cachedTokens: 0,
});

describe('usage events carry their model calls to the ledger', () => {
  const m = new RunEventMapper({ taskId: 't', contextId: 'c' }, 0, { input: 0, output: 0 }, () => ({
    input: 1,
    output: 2,
    cached: 1,
    currency: 'USD',
  }));
  const first = m.map({ type: 'usage', inputTokens: 10, outputTokens: 1, call: call('a', 10) })!;
  const second = m.map({ type: 'usage', inputTokens: 30, outputTokens: 2, call: call('b', 20) })!;

  it('merging queued usage events keeps the last counts and every call', () => {
    const [merged] = mergeChunks([first, second]);
    assert.deepEqual(merged.payload, { inputTokens: 30, outputTokens: 2 });
    assert.deepEqual(
      callsOf([merged])?.map((c) => [c.agent, c.input, c.price_in]),
      [
        ['a', 10, 1],
        ['b', 20, 1],
      ],
    );
  });

  it('the calls are not part of the event as stored and published', () => {
    assert.deepEqual(Object.keys(stored(first, 't', 1, 'now')).sort(), [
      'createdAt',
      'kind',
      'payload',
      'seq',
      'taskId',
    ]);
    assert.equal(JSON.stringify(first.payload).includes('calls'), false);
  });

  it('the echo model is not accounted', () => {
    assert.equal(callsOf([m.map({ type: 'usage', inputTokens: 3, outputTokens: 3 })!]), null);
  });
});
