import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/database/group-commit.js';

interface Item {
  key: string;
  n: number;
  weight: number;
}

describe('group commit', () => {
  const run = async (items: Item[], opts: { maxBatch?: number; maxBatchWeight?: number } = {}) => {
    const batches: number[][] = [];
    const gc = new GroupCommit<Item, number>(
      (batch) => {
        batches.push(batch.map((i) => i.n));
        return Promise.resolve(batch.map((i) => i.n * 10));
      },
      {
        maxBatch: opts.maxBatch ?? 64,
        maxInFlight: 1,
        keyOf: (i) => i.key,
        weightOf: (i) => i.weight,
        maxBatchWeight: opts.maxBatchWeight,
      },
    );
    const results = await Promise.all(items.map((i) => gc.submit(i)));
    return { batches, results };
  };

  it('sends what arrives together as one statement; each caller gets its own result', async () => {
    const { batches, results } = await run([1, 2, 3].map((n) => ({ key: `k${n}`, n, weight: 0 })));
    assert.deepEqual(batches, [[1, 2, 3]]);
    assert.deepEqual(results, [10, 20, 30]);
  });

  it('items of one key commit one after the other, in order', async () => {
    const { batches } = await run([
      { key: 'a', n: 1, weight: 0 },
      { key: 'a', n: 2, weight: 0 },
      { key: 'b', n: 3, weight: 0 },
    ]);
    assert.deepEqual(batches, [[1, 3], [2]]);
  });

  it('a batch closes before the item that would pass the weight cap; a heavier item goes alone', async () => {
    const { batches } = await run(
      [
        { key: 'a', n: 1, weight: 6 },
        { key: 'b', n: 2, weight: 6 },
        { key: 'c', n: 3, weight: 25 },
        { key: 'd', n: 4, weight: 1 },
      ],
      { maxBatchWeight: 10 },
    );
    for (const b of batches) {
      const w = b.reduce((s, n) => s + [0, 6, 6, 25, 1][n], 0);
      assert.ok(b.length === 1 || w <= 10, `batch ${JSON.stringify(b)} weighs ${w}`);
    }
    assert.deepEqual(batches.flat().sort(), [1, 2, 3, 4]);
    assert.ok(
      batches.some((b) => b.length === 1 && b[0] === 3),
      'the heavy item alone',
    );
  });
});
