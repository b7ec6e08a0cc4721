import { HttpException } from '@nestjs/common';
import { DomainError, httpStatusOf } from '../../common/errors.js';
import { BEARER_CHALLENGE, scopeChallenge } from '../../common/http-exception.filter.js';
import { classify } from '../jsonrpc/jsonrpc-errors.js';

/** A `google.rpc.Status` as the HTTP+JSON binding writes it (spec §11.6, AIP-193). */
export interface RestErrorBody {
  error: {
    code: number;
    status: string;
    message: string;
    details: Record<string, unknown>[];
  };
}

export interface RestError {
  status: number;
  body: RestErrorBody;
  headers: Record<string, string>;
}

/**
 * Spec §5.4's HTTP column, by `ErrorInfo` reason, with the `google.rpc.Code`
 * name. The JSON-RPC-only kinds (parse error, invalid request / params,
 * method not found) take the statuses the TCK expects of them (400, 404).
 */
const BY_REASON: Record<string, { http: number; status: string }> = {
  TASK_NOT_FOUND: { http: 404, status: 'NOT_FOUND' },
  TASK_NOT_CANCELABLE: { http: 400, status: 'FAILED_PRECONDITION' },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { http: 400, status: 'FAILED_PRECONDITION' },
  UNSUPPORTED_OPERATION: { http: 400, status: 'FAILED_PRECONDITION' },
  CONTENT_TYPE_NOT_SUPPORTED: { http: 400, status: 'INVALID_ARGUMENT' },
  INVALID_AGENT_RESPONSE: { http: 500, status: 'INTERNAL' },
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: { http: 400, status: 'FAILED_PRECONDITION' },
  EXTENSION_SUPPORT_REQUIRED: { http: 400, status: 'FAILED_PRECONDITION' },
  VERSION_NOT_SUPPORTED: { http: 400, status: 'FAILED_PRECONDITION' },
  PARSE_ERROR: { http: 400, status: 'INVALID_ARGUMENT' },
  INVALID_REQUEST: { http: 400, status: 'INVALID_ARGUMENT' },
  INVALID_PARAMS: { http: 400, status: 'INVALID_ARGUMENT' },
  METHOD_NOT_FOUND: { http: 404, status: 'NOT_FOUND' },
  UNAUTHENTICATED: { http: 401, status: 'UNAUTHENTICATED' },
  PERMISSION_DENIED: { http: 403, status: 'PERMISSION_DENIED' },
  RESOURCE_EXHAUSTED: { http: 429, status: 'RESOURCE_EXHAUSTED' },
  BUDGET_EXHAUSTED: { http: 429, status: 'RESOURCE_EXHAUSTED' },
  INTERNAL: { http: 500, status: 'INTERNAL' },
};

/** The `google.rpc.Code` name of an HTTP status Arbiter raises outside A2A's own errors. */
function statusName(http: number): string {
  switch (http) {
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'UNIMPLEMENTED';
    case 409:
      return 'ABORTED';
    case 413:
      return 'OUT_OF_RANGE';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 503:
      return 'UNAVAILABLE';
    default:
      return http >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT';
  }
}

/** The binding names fields as they are on the wire: `historyLength`, `message.parts[0]`, not `params.…`. */
const unprefix = (s: string): string => s.replace(/\bparams\./g, '');

function headersFor(http: number): Record<string, string> {
  if (http === 401) return { 'WWW-Authenticate': BEARER_CHALLENGE };
  if (http === 503) return { 'Retry-After': '1' };
  return {};
}

/**
 * The HTTP+JSON binding's one error translator (spec §11.6): any thrown
 * error → HTTP status + `{"error": {code, status, message, details}}`, with
 * a `google.rpc.ErrorInfo` (`domain: a2a-protocol.org`) for every A2A error
 * and a `google.rpc.BadRequest` naming the field of an invalid parameter.
 * Transient failures (database, shutdown, a slow subscriber) are 503 with
 * `Retry-After`. An unexpected error is 500 "internal error" and goes to
 * `onUnexpected` (to be logged); its text never reaches the client.
 */
export function toRestError(err: unknown, onUnexpected?: (err: unknown) => void): RestError {
  const c = classify(err);
  if (c) {
    const retryable = c.metadata?.retryable === 'true';
    const mapped =
      BY_REASON[c.reason] && (c.reason === 'RESOURCE_EXHAUSTED' || c.reason === 'BUDGET_EXHAUSTED')
        ? BY_REASON[c.reason]
        : retryable
          ? { http: 503, status: 'UNAVAILABLE' }
          : (BY_REASON[c.reason] ?? BY_REASON.INTERNAL);
    const retryAfter = c.metadata?.retry_after_seconds;
    const message = unprefix(c.message);
    const details: Record<string, unknown>[] = [];
    if (c.field) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.BadRequest',
        fieldViolations: [{ field: unprefix(c.field), description: message }],
      });
    }
    details.push({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: c.reason,
      domain: 'a2a-protocol.org',
      ...(c.metadata ? { metadata: c.metadata } : {}),
    });
    const scopes = c.metadata?.required_scopes;
    return {
      status: mapped.http,
      headers: retryAfter
        ? { 'Retry-After': retryAfter }
        : scopes
          ? { 'WWW-Authenticate': scopeChallenge(scopes.split(' ')) }
          : headersFor(mapped.http),
      body: { error: { code: mapped.http, status: mapped.status, message, details } },
    };
  }
  // HTTP-level refusals (body too large, not JSON, wrong media type …): not A2A errors, so no ErrorInfo.
  if (err instanceof DomainError || err instanceof HttpException) {
    const http = err instanceof DomainError ? httpStatusOf(err.code) : err.getStatus();
    if (http < 500) {
      const details =
        err instanceof DomainError && err.details?.length
          ? [
              {
                '@type': 'type.googleapis.com/google.rpc.BadRequest',
                fieldViolations: err.details.map((d) => ({ field: d.field, description: d.messages.join('; ') })),
              },
            ]
          : [];
      return {
        status: http,
        headers: headersFor(http),
        body: { error: { code: http, status: statusName(http), message: err.message, details } },
      };
    }
  }
  onUnexpected?.(err);
  const internal = BY_REASON.INTERNAL;
  return {
    status: 500,
    headers: {},
    body: {
      error: {
        code: 500,
        status: internal.status,
        message: 'internal error',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INTERNAL', domain: 'a2a-protocol.org' },
        ],
      },
    },
  };
}
