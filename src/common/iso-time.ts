/**
 * `new Date(ms).toISOString()`, for the timestamps every task event carries.
 *
 * On Node 20 V8 formats an ISO string with a printf per field (about 7,500 instructions, four times per blocking
 * send). Here the day's part (`2026-12-07T`) is formatted once per day and the time of day from a table of
 * two-digit strings. A time before 1970 or after 9999, a fraction of a millisecond (which a Date drops), and an
 * invalid time (which throws the same RangeError) are left to V8.
 */
export function isoTime(ms: number = Date.now()): string {
  if (!(ms >= 0 && ms < MAX_FAST && ms % 1 === 0)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedPrefix = new Date(day * DAY).toISOString().slice(0, 11);
  }
  let t = ms - day * DAY;
  const h = Math.floor(t / 3_600_000);
  t -= h * 3_600_000;
  const m = Math.floor(t / 60_000);
  t -= m * 60_000;
  const s = Math.floor(t / 1000);
  t -= s * 1000;
  return `${cachedPrefix}${TWO[h]}:${TWO[m]}:${TWO[s]}.${t < 10 ? '00' : t < 100 ? '0' : ''}${t}Z`;
}

/** `date.toISOString()` through `isoTime`. */
export function isoOf(date: Date): string {
  return isoTime(date.getTime());
}

const DAY = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from here on the year has five digits and a sign. */
const MAX_FAST = 253_402_300_800_000;
const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
let cachedDay = -1;
let cachedPrefix = '';

/** The first and last instants Arbiter stores or queries: years 0001 to 9999 in UTC, as ISO strings name them. */
export const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
export const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Whether a time (ms) is within years 0001–9999 in UTC: beyond them an ISO string needs a signed six-digit year
 * (`+010000-01-01T…`), which PostgreSQL does not read, and year 0000 it refuses.
 */
export function storableTime(ms: number): boolean {
  return ms >= FIRST_INSTANT && ms <= LAST_INSTANT;
}
