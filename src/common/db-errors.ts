/** Connection-level failures of PostgreSQL: the database is unreachable, not the request at fault. */
const CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300', // too_many_connections
]);

const MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Query read timeout/i,
  /not queryable/i,
  /Connection is not open/i,
  /connect ECONNREFUSED/i,
];

/** True when `err` (or the driver error TypeORM wraps) says the database cannot be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 4;
    i++
  ) {
    if (typeof e.code === 'string' && CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && MESSAGES.some((re) => re.test(e!.message as string))) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}

export const DATABASE_UNAVAILABLE = 'database unavailable; retry the request';

/**
 * True when PostgreSQL answered that the statement failed (an error with a
 * SQLSTATE, not a lost connection or a shutdown): its transaction rolled back
 * and nothing of it was committed. A client-side timeout or a dropped
 * connection is not: the statement may still commit.
 */
export function isStatementRefused(err: unknown): boolean {
  const e = (err as { driverError?: unknown }).driverError ?? err;
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !isDatabaseUnavailable(e);
}
