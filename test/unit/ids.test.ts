import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuid } from '../../src/common/ids.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

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
    const ids = Array.from({ length: 512 }, () => uuid());
    for (let pos = 0; pos < 36; pos++) {
      if ([8, 13, 18, 23].includes(pos)) {
        assert.ok(ids.every((id) => id[pos] === '-'));
        continue;
      }
      const values = new Set(ids.map((id) => id[pos]));
      // The version digit is always 4; the variant digit one of four; any other digit one of 16 (512 draws).
      const expected = pos === 14 ? 1 : pos === 19 ? 4 : 16;
      assert.equal(values.size, expected, `position ${pos}: ${[...values].join('')}`);
    }
  });
});
