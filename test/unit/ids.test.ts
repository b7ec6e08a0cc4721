import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuid, uuid7 } from '../../src/common/ids.js';
import { millisOf, V7 } from '../helpers/uuid7.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Positions of the text form whose digit is random in every id of the kind. */
function assertRandomDigits(ids: string[], fixed: Record<number, number>): void {
  for (let pos = 0; pos < 36; pos++) {
    if ([8, 13, 18, 23].includes(pos)) {
      assert.ok(ids.every((id) => id[pos] === '-'));
      continue;
    }
    if (pos in fixed) {
      assert.equal(new Set(ids.map((id) => id[pos])).size, fixed[pos], `position ${pos}`);
      continue;
    }
    const values = new Set(ids.map((id) => id[pos]));
    assert.equal(values.size, 16, `position ${pos}: ${[...values].join('')}`);
  }
}

describe('request-path ids (uuid)', () => {
  it('are version 4 UUIDs in their lowercase text form, each one new, across refills of the random pool', () => {
    const seen = new Set<string>();
    // 2,000 ids: the pool of 256 is drawn again seven times.
    for (let i = 0; i < 2000; i++) {
      const id = uuid();
      assert.match(id, V4);
      seen.add(id);
    }
    assert.equal(seen.size, 2000);
  });

  it('every random digit varies: no position is stuck (the version and variant bits aside)', () => {
    // The version digit is always 4; the variant digit one of four; any other digit one of 16 (512 draws).
    assertRandomDigits(
      Array.from({ length: 512 }, () => uuid()),
      { 14: 1, 19: 4 },
    );
  });
});

describe('time-ordered ids (uuid7)', () => {
  it('are version 7 UUIDs whose first 48 bits are the Unix time in milliseconds', () => {
    for (const ms of [0, 1, 0xff, 0x1_0000_0000 - 1, 0x1_0000_0000, 1796566478195, 2 ** 48 - 1]) {
      const id = uuid7(ms);
      assert.match(id, V7);
      assert.equal(millisOf(id), ms, id);
    }
    const before = Date.now();
    const id = uuid7();
    assert.ok(millisOf(id) >= before && millisOf(id) <= Date.now(), id);
  });

  it('sort by their time as text, and are each one new within one millisecond', () => {
    const times = [1796566478195, 1796566478196, 1796566479000, 1800000000000, 1900000000000];
    const ids = times.map((ms) => uuid7(ms));
    assert.deepEqual([...ids].sort(), ids);
    const seen = new Set(Array.from({ length: 2000 }, () => uuid7(1796566478195)));
    assert.equal(seen.size, 2000);
  });

  it('every digit after the time is random (the version and variant bits aside)', () => {
    const ids = Array.from({ length: 512 }, () => uuid7(1796566478195));
    const time = uuid7(1796566478195).slice(0, 13);
    assert.ok(ids.every((id) => id.startsWith(time)));
    // Positions 0–12 are the time (fixed here); 14 the version; 19 the variant (one of four).
    const fixed: Record<number, number> = { 14: 1, 19: 4 };
    for (let pos = 0; pos < 13; pos++) if (pos !== 8) fixed[pos] = 1;
    assertRandomDigits(ids, fixed);
  });
});
