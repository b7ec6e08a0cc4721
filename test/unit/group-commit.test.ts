import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/database/group-commit.js';
import { isStatementRefused } from '../../src/common/db-errors.js';

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

  it('a batch the database refused is split and retried item by item; one whose outcome is unknown is not', async () => {
    const attempt = async (failure: Error) => {
      const calls: number[][] = [];
      const gc = new GroupCommit<Item, number>(
        (batch) => {
          calls.push(batch.map((i) => i.n));
          if (batch.length > 1 || batch[0]?.n === 2) return Promise.reject(failure);
          return Promise.resolve(batch.map((i) => i.n * 10));
        },
        { maxBatch: 64, maxInFlight: 1, keyOf: (i) => i.key, splittable: isStatementRefused },
      );
      const results = await Promise.allSettled([1, 2, 3].map((n) => gc.submit({ key: `k${n}`, n, weight: 0 })));
      return { calls, results: results.map((r) => (r.status === 'fulfilled' ? r.value : 'failed')) };
    };
    // A unique violation: PostgreSQL rolled the statement back; the others are retried alone and commit.
    const refused = Object.assign(new Error('duplicate key value'), { code: '23505' });
    assert.deepEqual(await attempt(refused), { calls: [[1, 2, 3], [1], [2], [3]], results: [10, 'failed', 30] });
    // A client-side timeout or a lost connection: the statement may still commit, so nothing is sent twice.
    for (const unknown of [
      new Error('Query read timeout'),
      Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ]) {
      assert.deepEqual(await attempt(unknown), { calls: [[1, 2, 3]], results: ['failed', 'failed', 'failed'] });
    }
  });

  it('without keys (reads), everything queued may share a batch, duplicates too, up to the batch size', async () => {
    const batches: number[][] = [];
    const gc = new GroupCommit<number, number>(
      (batch) => {
        batches.push(batch);
        return Promise.resolve(batch.map((n) => -n));
      },
      { maxBatch: 3, maxInFlight: 1 },
    );
    const results = await Promise.all([1, 1, 2, 3, 4].map((n) => gc.submit(n)));
    assert.deepEqual(results, [-1, -1, -2, -3, -4]);
    assert.deepEqual(batches, [
      [1, 1, 2],
      [3, 4],
    ]);
  });
});
