/** The three HTTP-date forms a recipient must accept (RFC 9110 §5.6.7); the last two are obsolete. */
const IMF_FIXDATE = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC850_DATE = /^[A-Za-z]{6,9}, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME_DATE = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

const NUMBER = /^\d+(\.\d+)?$/;

/** Parses an HTTP-date to epoch milliseconds; NaN when it is not one. */
export function parseHttpDate(value: string): number {
  if (IMF_FIXDATE.test(value) || RFC850_DATE.test(value)) return Date.parse(value);
  // asctime carries no zone; HTTP dates are always UTC.
  if (ASCTIME_DATE.test(value)) return Date.parse(`${value} GMT`);
  return NaN;
}

/**
 * The wait a provider asks for before the next request, in milliseconds:
 * `retry-after-ms` (sent by OpenAI and Anthropic, finer than seconds) when
 * present, else `Retry-After` as delta-seconds or an HTTP-date (RFC 9110
 * §10.2.3). A date in the past is 0; a missing or unreadable header is
 * `undefined` (the caller's own backoff applies).
 */
export function parseRetryAfter(headers: Pick<Headers, 'get'>, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && NUMBER.test(ms)) return Math.ceil(Number(ms));
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  // delta-seconds is 1*DIGIT; a fraction is tolerated (some servers send one).
  if (NUMBER.test(value)) return Math.ceil(Number(value) * 1000);
  const at = parseHttpDate(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
