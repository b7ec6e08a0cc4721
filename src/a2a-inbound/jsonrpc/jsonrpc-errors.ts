import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../common/db-errors.js';
import { DomainError } from '../../common/errors.js';
import { TaskError } from '../../tasks/task.errors.js';
import { A2aError, type A2aErrorKind, type Dialect } from '../../a2a-wire/a2a-errors.js';

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * An error as the A2A bindings report it: the JSON-RPC number and the
 * `ErrorInfo` reason (spec §5.4, §9.5); the HTTP+JSON binding maps the
 * reason to its status (§11.6, see `rest-errors.ts`).
 */
export interface Classified {
  code: number;
  reason: string;
  message: string;
  field?: string;
  metadata?: Record<string, string>;
}

const BY_KIND: Record<A2aErrorKind, { code: number; reason: string }> = {
  parse_error: { code: -32700, reason: 'PARSE_ERROR' },
  invalid_request: { code: -32600, reason: 'INVALID_REQUEST' },
  method_not_found: { code: -32601, reason: 'METHOD_NOT_FOUND' },
  invalid_params: { code: -32602, reason: 'INVALID_PARAMS' },
  internal: { code: -32603, reason: 'INTERNAL' },
  push_not_supported: { code: -32003, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' },
  unsupported_operation: { code: -32004, reason: 'UNSUPPORTED_OPERATION' },
  content_type_not_supported: { code: -32005, reason: 'CONTENT_TYPE_NOT_SUPPORTED' },
  extended_card_not_configured: { code: -32007, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' },
  version_not_supported: { code: -32009, reason: 'VERSION_NOT_SUPPORTED' },
};

const retryable = (message: string, metadata: Record<string, string>): Classified => ({
  ...BY_KIND.internal,
  message,
  metadata: { retryable: 'true', ...metadata },
});

/** What an error means to A2A; undefined for one the bindings do not expect (a bug: log it, answer -32603 / 500). */
export function classify(err: unknown): Classified | undefined {
  if (err instanceof A2aError) {
    return { ...BY_KIND[err.reason], message: err.message, field: err.field, metadata: err.metadata };
  }
  if (err instanceof TaskError) {
    switch (err.reason) {
      case 'task_not_found':
        return { code: -32001, reason: 'TASK_NOT_FOUND', message: err.message };
      case 'task_not_cancelable':
        return { code: -32002, reason: 'TASK_NOT_CANCELABLE', message: err.message };
      case 'task_terminal':
        return { ...BY_KIND.unsupported_operation, message: err.message };
      case 'invalid_params':
        return { ...BY_KIND.invalid_params, message: `invalid params: ${err.message}`, field: err.field };
      case 'subscriber_overflow':
        return retryable(err.message, { resume_after_seq: String(err.resumeAfter) });
      default: {
        const unreachable: never = err.reason;
        return unreachable;
      }
    }
  }
  if (isDatabaseUnavailable(err)) return retryable(DATABASE_UNAVAILABLE, { reason: 'database_unavailable' });
  if (err instanceof DomainError) {
    switch (err.code) {
      case 'unauthorized':
        // Authentication is a custom error in JSON-RPC (spec §3.3.2); -32000 is outside A2A's own range.
        return { code: -32000, reason: 'UNAUTHENTICATED', message: err.message };
      case 'forbidden':
        return {
          code: -32000,
          reason: 'PERMISSION_DENIED',
          message: err.message,
          ...(err.requiredScopes ? { metadata: { required_scopes: err.requiredScopes.join(' ') } } : {}),
        };
      case 'not_found':
        // The agent of the URL: a missing resource, answered like a missing task.
        return { code: -32001, reason: 'TASK_NOT_FOUND', message: err.message };
      case 'unavailable':
        return retryable(err.message, { reason: 'unavailable' });
      case 'rate_limited':
        // Not an A2A error: a server-defined one (-32000 range), retryable after the given time.
        return {
          code: -32000,
          reason: 'RESOURCE_EXHAUSTED',
          message: err.message,
          metadata: { retryable: 'true', retry_after_seconds: String(err.retryAfterSeconds ?? 1) },
        };
      case 'budget_exhausted':
        // Server-defined too (-32000 range): retryable once the budget's period has reset.
        return {
          code: -32000,
          reason: 'BUDGET_EXHAUSTED',
          message: err.message,
          metadata: {
            retryable: 'true',
            budget: err.budget ?? '',
            resets_at: err.resetsAt ?? '',
            retry_after_seconds: String(err.retryAfterSeconds ?? 1),
          },
        };
      case 'validation_failed':
        return { ...BY_KIND.invalid_params, message: err.message, field: err.details?.[0]?.field };
      case 'invalid_json':
      case 'conflict':
      case 'read_only':
      case 'unprocessable':
      case 'method_not_allowed':
      case 'payload_too_large':
      case 'unsupported_media_type':
      case 'internal':
        return undefined; // not raised behind this binding: a bug if it happens
      default: {
        const unreachable: never = err.code;
        return unreachable;
      }
    }
  }
  return undefined;
}

/**
 * The JSON-RPC binding's one error translator: any thrown error → the error
 * object in `dialect`. v1.0 attaches `google.rpc` details (`BadRequest`
 * naming the field, then `ErrorInfo` with the reason); v0.3 a plain `data`
 * object. Both use the same numbers. An unexpected error becomes -32603
 * "internal error" and is handed to `onUnexpected` (to be logged): its text
 * never reaches the client.
 */
export function toJsonRpcError(
  err: unknown,
  dialect: Dialect,
  onUnexpected?: (err: unknown) => void,
): JsonRpcErrorObject {
  let c = classify(err);
  if (!c) {
    onUnexpected?.(err);
    c = { ...BY_KIND.internal, message: 'internal error' };
  }
  if (dialect === '0.3') {
    const data: Record<string, unknown> = { ...(c.field ? { field: c.field } : {}), ...c.metadata };
    return Object.keys(data).length ? { code: c.code, message: c.message, data } : { code: c.code, message: c.message };
  }
  const details: Record<string, unknown>[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: c.reason,
      domain: 'a2a-protocol.org',
      ...(c.metadata ? { metadata: c.metadata } : {}),
    },
  ];
  if (c.field) {
    details.unshift({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: c.field, description: c.message }],
    });
  }
  return { code: c.code, message: c.message, data: details };
}
