import { QueryFailedError } from 'typeorm';

/**
 * A log-safe summary of an error: never a query's parameters (they carry
 * user text and token hashes), never a provider key.
 */
export function safeError(err: unknown): Record<string, unknown> {
  if (err instanceof QueryFailedError) {
    const driver = err.driverError as { code?: string } | undefined;
    return { type: 'QueryFailedError', message: err.message, code: driver?.code, query: err.query.slice(0, 500) };
  }
  if (err instanceof Error) {
    return { type: err.name, message: err.message, stack: err.stack?.split('\n').slice(0, 8).join('\n') };
  }
  return { type: typeof err, message: String(err).slice(0, 500) };
}
