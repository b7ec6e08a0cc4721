import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addInto, bound, quantile, SLOTS, slotOf, type Histogram } from '../../src/stats/histogram.js';
import { intervalOf, spanOf, WINDOW_NAMES, WINDOWS } from '../../src/stats/stats-windows.js';

const histogramOf = (seconds: number[]): Histogram => {
  const h: Histogram = new Map();
  for (const s of seconds) h.set(slotOf(s), (h.get(slotOf(s)) ?? 0) + 1);
  return h;
};

describe('stats: log-scale histograms and percentiles', () => {
  it('puts every time in the slot whose bounds hold it', () => {
    for (const s of [0, 0.001, 0.005, 0.0051, 0.02, 0.3, 1, 7.5, 60, 600, 3600]) {
      const k = slotOf(s);
      assert.ok(s <= bound(k), `${s} ≤ bound(${k})`);
      if (k > 0) assert.ok(s > bound(k - 1), `${s} > bound(${k - 1})`);
    }
    assert.equal(slotOf(1e9), SLOTS - 1);
    assert.equal(bound(SLOTS - 1), Infinity);
    assert.equal(slotOf(-1), 0);
    assert.equal(slotOf(Number.NaN), 0);
  });

  it('reads p50 and p95 back within one slot of the exact values', () => {
    const times = Array.from({ length: 1000 }, (_, i) => 0.01 * 1.01 ** i); // 10 ms … about 210 s
    const sorted = [...times].sort((a, b) => a - b);
    const h = histogramOf(times);
    for (const q of [0.5, 0.95]) {
      const exact = sorted[Math.ceil(q * sorted.length) - 1];
      const got = quantile(h, q)!;
      assert.ok(got / exact < 1.5 && exact / got < 1.5, `q${q}: ${got} vs ${exact}`);
    }
  });

  it('adds histograms from many replicas and periods into the same percentiles as one', () => {
    const a = [0.1, 0.2, 0.4, 2];
    const b = [0.15, 0.3, 5, 9, 0.05];
    const sum = addInto(histogramOf(a), histogramOf(b));
    assert.deepEqual(quantile(sum, 0.5), quantile(histogramOf([...a, ...b]), 0.5));
    assert.deepEqual(quantile(sum, 0.95), quantile(histogramOf([...a, ...b]), 0.95));
  });

  it('answers null for no runs, and the slot’s lower bound for times past the last one', () => {
    assert.equal(quantile(new Map(), 0.5), null);
    assert.equal(quantile(histogramOf([1e7]), 0.5), bound(SLOTS - 2));
  });

  it('gives one time the percentiles of its own slot', () => {
    const p = quantile(histogramOf([3]), 0.5)!;
    const k = slotOf(3);
    assert.ok(p > bound(k - 1) && p <= bound(k));
  });
});

describe('stats: windows and intervals', () => {
  it('cuts every window in at most 120 intervals, the last holding now', () => {
    const now = Date.parse('2026-03-04T10:17:31.250Z');
    for (const w of WINDOW_NAMES) {
      const span = spanOf(w, now);
      assert.ok(span.count <= 120 && span.count >= 15, `${w}: ${span.count}`);
      assert.equal(span.to - span.from, WINDOWS[w].ms);
      assert.equal(intervalOf(span, now), span.count - 1);
      assert.equal(span.from % span.step, 0, 'intervals start on UTC boundaries');
      assert.equal(intervalOf(span, span.from - 1), -1);
      assert.equal(intervalOf(span, span.to), -1);
      assert.equal(intervalOf(span, span.from), 0);
    }
  });

  it('reads minute rows up to a day and hour rows beyond, whose intervals hold whole rows', () => {
    for (const w of WINDOW_NAMES) {
      const { step, grain } = WINDOWS[w];
      assert.equal(step % (grain * 60_000), 0, w);
    }
    assert.equal(WINDOWS['24h'].grain, 1);
    assert.equal(WINDOWS['7d'].grain, 60);
  });
});
