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
    // Fixed pseudo-random times (no Math.random: a failure reproduces): across the whole range, each on a day of
    // its own, and within two days, many on the day of the one before.
    let x = 0x2545f491;
    const next = (): number => {
      x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
      return x / 2 ** 32;
    };
    const anyDay = Array.from({ length: 10_000 }, () => Math.floor(next() * 253_402_300_800_000));
    const twoDays = Array.from({ length: 10_000 }, () => Date.UTC(2026, 11, 6) + Math.floor(next() * 2 * 86_400_000));
    assert.ok(new Set([...anyDay, ...twoDays]).size > 19_900, 'the generator does not cycle');
    for (const ms of [...edges, ...anyDay, ...twoDays]) {
      assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    }
    // The same day again after another: the day's part is not left from the one before.
    assert.equal(isoTime(Date.UTC(2026, 0, 2, 3, 4, 5, 6)), '2026-01-02T03:04:05.006Z');
    assert.equal(isoTime(Date.UTC(2025, 0, 2, 3, 4, 5, 60)), '2025-01-02T03:04:05.060Z');
  });

  it('leaves years outside 1970–9999 and fractions of a millisecond to V8, and throws its RangeError for an invalid time', () => {
    const outside = [-1, Date.UTC(1969, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), -62_135_596_800_000];
    for (const ms of [...outside, 0.5, 1.5, 86_399_999.9, -0]) {
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
