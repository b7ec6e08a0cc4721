import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { safeError } from './safe-error.js';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from './db-errors.js';
import { DomainError, httpStatusOf, requestIdOf, type ErrorCode, type FieldError } from './errors.js';

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: FieldError[];
  /** A 403 for a missing scope: the scopes that would have allowed the request. */
  required_scopes?: readonly string[];
  /** A `budget_exhausted` refusal: the budget that is spent and when it resets (ISO 8601). */
  budget?: string;
  resets_at?: string;
  request_id?: string;
}

export const BEARER_CHALLENGE = 'Bearer realm="arbiter"';

/** RFC 6750 §3.1: the challenge of a request refused for a missing scope. */
export const scopeChallenge = (scopes: readonly string[]): string =>
  `${BEARER_CHALLENGE}, error="insufficient_scope", scope="${scopes.join(' ')}"`;

/** Maps a status Nest or Express raised on its own (404 route, 405 …) to our codes. */
function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'validation_failed';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 409:
      return 'conflict';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'validation_failed';
  }
}

/** Turns any thrown error into the REST error envelope. */
export function toErrorResponse(err: unknown, requestId: string | undefined): { status: number; body: ErrorBody } {
  if (err instanceof DomainError) {
    return {
      status: httpStatusOf(err.code),
      body: {
        error: err.message,
        code: err.code,
        details: err.details,
        ...(err.requiredScopes ? { required_scopes: err.requiredScopes } : {}),
        ...(err.resetsAt ? { budget: err.budget, resets_at: err.resetsAt } : {}),
        request_id: requestId,
      },
    };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const res = err.getResponse();
    const message =
      typeof res === 'string'
        ? res
        : typeof (res as { message?: unknown }).message === 'string'
          ? (res as { message: string }).message
          : err.message;
    return { status, body: { error: message, code: codeOfStatus(status), request_id: requestId } };
  }
  if (isDatabaseUnavailable(err)) {
    return { status: 503, body: { error: DATABASE_UNAVAILABLE, code: 'unavailable', request_id: requestId } };
  }
  return {
    status: 500,
    body: { error: 'internal error; quote the request_id when reporting it', code: 'internal', request_id: requestId },
  };
}

export function sendError(res: Response, status: number, body: ErrorBody, req?: Request): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // Refused before its body was read (unauthenticated, unknown route …): close the connection after the answer
  // rather than read what the client is still sending.
  if (req && !req.complete) res.setHeader('Connection', 'close');
  if (status === 401) res.setHeader('WWW-Authenticate', BEARER_CHALLENGE);
  if (body.required_scopes) res.setHeader('WWW-Authenticate', scopeChallenge(body.required_scopes));
  if (status === 503 && !res.getHeader('Retry-After')) res.setHeader('Retry-After', '1');
  res.status(status).json(body);
}

@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  catch(err: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const { status, body } = toErrorResponse(err, requestIdOf(req));
    if (err instanceof DomainError && err.retryAfterSeconds !== undefined && !res.headersSent) {
      res.setHeader('Retry-After', String(err.retryAfterSeconds));
    }
    if (status === 503) {
      this.logger.warn({ request_id: requestIdOf(req) }, body.error);
    } else if (status >= 500) {
      this.logger.error({ err: safeError(err), request_id: requestIdOf(req) }, 'unhandled error');
    }
    sendError(res, status, body, req);
  }
}
