/**
 * Fixed log-scale histogram slots for run times: slot k counts times up to
 * `bound(k)` seconds (5 ms × 1.5^k), the last slot everything longer. So a
 * percentile read back from the counts is within one slot, about ±25%, of
 * the true value, and counts from any number of replicas and periods add.
 */
export const SLOTS = 36;
const BASE = 0.005;
const RATIO = 1.5;

/** The upper bound of slot `k` in seconds (the last slot: Infinity). */
export function bound(k: number): number {
  return k >= SLOTS - 1 ? Infinity : BASE * RATIO ** k;
}

/** The slot a time of `seconds` falls in. */
export function slotOf(seconds: number): number {
  if (!(seconds > BASE)) return 0;
  const k = Math.ceil(Math.log(seconds / BASE) / Math.log(RATIO) - 1e-9);
  return Math.min(Math.max(k, 0), SLOTS - 1);
}

/** A histogram: counts per slot (sparse). */
export type Histogram = Map<number, number>;

/** Adds `b` into `a`. */
export function addInto(a: Histogram, b: Histogram): Histogram {
  for (const [k, n] of b) a.set(k, (a.get(k) ?? 0) + n);
  return a;
}

/**
 * The `q` quantile (0 < q < 1) in seconds, interpolated geometrically
 * within its slot; null for an empty histogram. The last slot answers its
 * lower bound (the histogram knows no more).
 */
export function quantile(h: Histogram, q: number): number | null {
  let total = 0;
  for (const n of h.values()) total += n;
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (const k of [...h.keys()].sort((x, y) => x - y)) {
    const n = h.get(k) ?? 0;
    if (n <= 0) continue;
    if (seen + n >= rank) {
      const hi = bound(k);
      const lo = k === 0 ? 0 : bound(k - 1);
      if (hi === Infinity) return lo;
      if (k === 0) return hi * Math.max((rank - seen) / n, 0);
      return lo * (hi / lo) ** Math.max((rank - seen) / n, 0);
    }
    seen += n;
  }
  return null;
}
