import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Latch } from '../../src/common/latch.js';

describe('latch', () => {
  it('gives a waiter the value opened after it waited, and the first value only', async () => {
    const l = new Latch<number>();
    const waiting = l.wait();
    assert.equal(l.isOpen, false);
    l.open(1);
    l.open(2);
    assert.equal(await waiting, 1);
    assert.equal(await l.wait(), 1);
    assert.equal(l.isOpen, true);
  });

  it('gives a waiter that comes after it opened the value at once, and the same promise each time', async () => {
    const l = new Latch<string | null>();
    l.open(null);
    l.open('later');
    const p = l.wait();
    assert.equal(p, l.wait());
    assert.equal(await p, null);
  });

  it('settles every waiter in the order they waited', async () => {
    const l = new Latch();
    const order: number[] = [];
    const all = [1, 2, 3].map((n) => l.wait().then(() => order.push(n)));
    l.open();
    await Promise.all(all);
    assert.deepEqual(order, [1, 2, 3]);
  });
});
