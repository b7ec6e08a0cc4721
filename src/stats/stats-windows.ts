/** The windows the stats API answers, and the interval each is cut in (so a chart has at most 120 points). */
export const WINDOWS = {
  '15m': { ms: 15 * 60_000, step: 60_000, grain: 1 },
  '1h': { ms: 3_600_000, step: 60_000, grain: 1 },
  '6h': { ms: 6 * 3_600_000, step: 5 * 60_000, grain: 1 },
  '24h': { ms: 24 * 3_600_000, step: 15 * 60_000, grain: 1 },
  '7d': { ms: 7 * 86_400_000, step: 2 * 3_600_000, grain: 60 },
  '30d': { ms: 30 * 86_400_000, step: 6 * 3_600_000, grain: 60 },
} as const;

export type WindowName = keyof typeof WINDOWS;
export const WINDOW_NAMES = Object.keys(WINDOWS) as WindowName[];

export interface Span {
  /** First interval's start (inclusive). */
  from: number;
  /** Last interval's end (exclusive): `now` rounded up to the interval. */
  to: number;
  step: number;
  /** Which rows are read: minute (1) or hour (60) ones. */
  grain: 1 | 60;
  count: number;
}

/** The intervals of `window` ending with the one that holds `now` (UTC-aligned to the interval). */
export function spanOf(window: WindowName, now: number): Span {
  const w = WINDOWS[window];
  const to = Math.floor(now / w.step) * w.step + w.step;
  return { from: to - w.ms, to, step: w.step, grain: w.grain, count: w.ms / w.step };
}

/** The index of the interval `at` falls in, or -1 outside the span. */
export function intervalOf(span: Span, at: number): number {
  if (at < span.from || at >= span.to) return -1;
  return Math.floor((at - span.from) / span.step);
}
