import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AsyncQueue, promised, QueueOverflowError } from '../../src/common/async-queue.js';

describe('async queue', () => {
  it('answers calls of next made before items arrive, in order, then the end', async () => {
    const q = new AsyncQueue<number>();
    const it = q[Symbol.asyncIterator]();
    const early = [it.next(), it.next(), it.next()];
    q.push(1);
    q.push(2);
    const later = it.next(); // asked while two answers are still on their way
    q.push(3);
    q.push(4);
    q.close();
    assert.deepEqual(
      (await Promise.all([...early, later, it.next()])).map((r) => (r.done ? 'end' : r.value)),
      [1, 2, 3, 4, 'end'],
    );
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  it('hands over queued items at once and fails a waiting reader with the error, then ends', async () => {
    const q = new AsyncQueue<string>();
    q.push('a');
    const it = q[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { value: 'a', done: false });
    const waiting = it.next();
    q.fail(new Error('broken'));
    await assert.rejects(waiting, /broken/);
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  it('an error after queued items comes after them', async () => {
    const q = new AsyncQueue<number>(2);
    q.push(1);
    q.push(2);
    assert.equal(q.push(3), false); // past the limit: the queue fails
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const n of q) seen.push(n);
    }, QueueOverflowError);
    assert.deepEqual(seen, [1, 2]);
  });

  it('return ends the iteration and answers a reader still waiting', async () => {
    const q = new AsyncQueue<number>();
    const it = q[Symbol.asyncIterator]();
    const waiting = it.next();
    assert.deepEqual(await it.return!(), { value: undefined, done: true });
    assert.deepEqual(await waiting, { value: undefined, done: true });
    q.push(1);
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  it('steps hands over what is queued at once, and waits with a promise only when nothing is', async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    q.push(2);
    const steps = q.steps();
    assert.deepEqual(steps.next(), { value: 1, done: false });
    assert.deepEqual(steps.next(), { value: 2, done: false });
    const waiting = steps.next();
    assert.ok(waiting instanceof Promise);
    q.push(3);
    q.close();
    assert.deepEqual(await waiting, { value: 3, done: false });
    assert.deepEqual(steps.next(), { value: undefined, done: true });
  });

  it('steps gives an error as a rejected promise, never a throw, and ends after it', async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    q.fail(new Error('broken'));
    const steps = q.steps();
    assert.deepEqual(steps.next(), { value: 1, done: false });
    const failed = steps.next();
    assert.ok(failed instanceof Promise);
    await assert.rejects(failed, /broken/);
    assert.deepEqual(steps.next(), { value: undefined, done: true });
  });

  it('promised makes every step a promise, and passes return on', async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    const it = promised(q.steps());
    const first = it.next();
    assert.ok(first instanceof Promise);
    assert.deepEqual(await first, { value: 1, done: false });
    assert.deepEqual(await it.return!(), { value: undefined, done: true });
    q.push(2);
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });
});
