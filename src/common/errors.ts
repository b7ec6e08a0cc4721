/** Stable error codes of the REST surface; the JSON-RPC dialects map their own. */
export type ErrorCode =
  | 'validation_failed'
  | 'invalid_json'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'read_only'
  | 'unprocessable'
  | 'rate_limited'
  | 'budget_exhausted'
  | 'unavailable'
  | 'internal';

/** The most field problems one validation error lists. */
export const MAX_LISTED = 20;

/** One failing input field: a dotted path (`agent_def.temperature`) and why. */
export interface FieldError {
  field: string;
  messages: string[];
}

/**
 * The one exception type modules throw. Transport edges (the REST filter,
 * the JSON-RPC dialects) turn the code into a status or an error number.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldError[],
  ) {
    super(message);
    this.name = 'DomainError';
  }

  /**
   * A validation failure naming its fields. At most `MAX_LISTED` are listed
   * (80,000 unknown keys must not make a megabytes-long answer); the message
   * then says how many there were.
   */
  static validation(details: FieldError[], message = 'request validation failed', unlisted = 0): DomainError {
    const total = details.length + unlisted;
    if (total <= MAX_LISTED) return new DomainError('validation_failed', message, details);
    const err = new DomainError(
      'validation_failed',
      `${message}: ${total} problems, the first ${MAX_LISTED} listed`,
      details.slice(0, MAX_LISTED),
    );
    err.unlisted = total - MAX_LISTED;
    return err;
  }

  /** Validation problems found but not listed in `details` (see `validation`). */
  unlisted = 0;

  /** When the client may try again (seconds), for `Retry-After` and the A2A error's `retry_after_seconds`. */
  retryAfterSeconds?: number;

  /** A quota refused the request (HTTP 429 with `Retry-After`). */
  static rateLimited(message: string, retryAfterSeconds: number): DomainError {
    const err = new DomainError('rate_limited', message);
    err.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
    return err;
  }

  /** When a spent budget resets (ISO 8601), for a `budget_exhausted` refusal. */
  resetsAt?: string;

  /**
   * A token or cost budget is spent (HTTP 429 with `Retry-After` until it resets; on A2A -32000
   * `BUDGET_EXHAUSTED` with `resets_at`). `budget` names it (`tokens_per_month` …).
   */
  static budgetExhausted(message: string, resetsAt: Date, budget: string, now = Date.now()): DomainError {
    const err = new DomainError('budget_exhausted', message);
    err.resetsAt = resetsAt.toISOString();
    err.budget = budget;
    err.retryAfterSeconds = Math.max(1, Math.ceil((resetsAt.getTime() - now) / 1000));
    return err;
  }

  /** The budget a `budget_exhausted` refusal names. */
  budget?: string;

  /** The scopes that would have allowed a refused request (403 `insufficient_scope`). */
  requiredScopes?: readonly string[];

  /** The credential lacks every scope the request accepts. */
  static missingScope(required: readonly string[], what = 'this request'): DomainError {
    const err = new DomainError(
      'forbidden',
      `${what} needs the ${required.length === 1 ? 'scope' : 'scopes'} ${required.join(' or ')}; this credential does not have ${required.length === 1 ? 'it' : 'any of them'}`,
    );
    err.requiredScopes = required;
    return err;
  }

  static notFound(what: string): DomainError {
    return new DomainError('not_found', `${what} not found`);
  }
}

export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case 'validation_failed':
    case 'invalid_json':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'conflict':
    case 'read_only':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'unprocessable':
      return 422;
    case 'rate_limited':
    case 'budget_exhausted':
      return 429;
    case 'unsupported_media_type':
      return 415;
    case 'unavailable':
      return 503;
    case 'internal':
      return 500;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

/** The request id (see `requestIdFor`), as a string. */
export function requestIdOf(req: object): string {
  const id = (req as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : '';
}

/** A thrown value as an `Error` (anything else is a bug, still an `Error` to whoever handles it). */
export const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));
