import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isoOf, isoTime } from '../../src/common/iso-time.js';

describe('isoTime', () => {
  it('formats as toISOString does across days, leap years and the edges of its fast range', () => {
    const edges = [
      0,
      1,
      999,
      86_399_999,
      86_400_000,
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
      Date.UTC(2024, 2, 1),
      Date.UTC(2026, 11, 31, 23, 59, 59, 990),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    // A fixed pseudo-random walk (no Math.random: a failure reproduces).
    let x = 0x2545f491;
    const walk = Array.from({ length: 20_000 }, () => {
      x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
      return Math.floor((x / 2 ** 31) * 253_402_300_800_000);
    });
    for (const ms of [...edges, ...walk]) assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    // The same day again after another: the day's part is not left from the one before.
    assert.equal(isoTime(Date.UTC(2026, 0, 2, 3, 4, 5, 6)), '2026-01-02T03:04:05.006Z');
    assert.equal(isoTime(Date.UTC(2025, 0, 2, 3, 4, 5, 60)), '2025-01-02T03:04:05.060Z');
  });

  it('leaves years outside 1970–9999 to V8 and throws its RangeError for an invalid time', () => {
    for (const ms of [-1, Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), -62_135_596_800_000]) {
      assert.equal(isoTime(ms), new Date(ms).toISOString());
    }
    assert.throws(() => isoTime(Number.NaN), RangeError);
    assert.throws(() => isoOf(new Date('not a date')), RangeError);
  });

  it('formats now by default, and a Date through isoOf', () => {
    const before = Date.now();
    const at = Date.parse(isoTime());
    assert.ok(at >= before && at <= Date.now());
    const d = new Date(Date.UTC(2026, 11, 7, 5, 6, 7, 89));
    assert.equal(isoOf(d), '2026-12-07T05:06:07.089Z');
  });
});
