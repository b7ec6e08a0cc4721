import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../common/db-errors.js';
import { SubscriberOverflowError, TaskError, type TaskErrorCode } from '../tasks/task-errors.js';

export type Dialect = '1.0' | '0.3';

/** Every error a JSON-RPC request can end in, by meaning; codes are per dialect. */
export type A2aErrorKind =
  | 'parse_error'
  | 'invalid_request'
  | 'method_not_found'
  | 'invalid_params'
  | 'internal'
  | 'version_not_supported'
  | Exclude<TaskErrorCode, 'invalid_params'>;

export class A2aError extends Error {
  constructor(
    readonly kind: A2aErrorKind,
    message: string,
    readonly field?: string,
    readonly metadata?: Record<string, string>,
  ) {
    super(message);
    this.name = 'A2aError';
  }

  static invalidParams(field: string, problem: string): A2aError {
    return new A2aError('invalid_params', `invalid params: ${field} ${problem}`, field);
  }

  static from(err: unknown): A2aError | undefined {
    if (err instanceof A2aError) return err;
    if (isDatabaseUnavailable(err)) {
      return new A2aError('internal', DATABASE_UNAVAILABLE, undefined, {
        retryable: 'true',
        reason: 'database_unavailable',
      });
    }
    if (err instanceof SubscriberOverflowError) {
      return new A2aError('internal', err.message, undefined, {
        retryable: 'true',
        resume_after_seq: String(err.resumeAfter),
      });
    }
    if (err instanceof TaskError) {
      return err.code === 'invalid_params'
        ? new A2aError('invalid_params', `invalid params: ${err.message}`, err.field)
        : new A2aError(err.code, err.message);
    }
    return undefined;
  }
}

interface CodeInfo {
  code: number;
  reason: string;
}

/** v1.0 spec §5.4 / §9.5. */
function v1Code(kind: A2aErrorKind): CodeInfo {
  switch (kind) {
    case 'parse_error':
      return { code: -32700, reason: 'PARSE_ERROR' };
    case 'invalid_request':
      return { code: -32600, reason: 'INVALID_REQUEST' };
    case 'method_not_found':
      return { code: -32601, reason: 'METHOD_NOT_FOUND' };
    case 'invalid_params':
      return { code: -32602, reason: 'INVALID_PARAMS' };
    case 'internal':
      return { code: -32603, reason: 'INTERNAL' };
    case 'task_not_found':
      return { code: -32001, reason: 'TASK_NOT_FOUND' };
    case 'task_not_cancelable':
      return { code: -32002, reason: 'TASK_NOT_CANCELABLE' };
    case 'push_not_supported':
      return { code: -32003, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' };
    case 'unsupported_operation':
    case 'task_terminal':
      return { code: -32004, reason: 'UNSUPPORTED_OPERATION' };
    case 'content_type_not_supported':
      return { code: -32005, reason: 'CONTENT_TYPE_NOT_SUPPORTED' };
    case 'extended_card_not_configured':
      return { code: -32007, reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' };
    case 'version_not_supported':
      return { code: -32009, reason: 'VERSION_NOT_SUPPORTED' };
    default: {
      const unreachable: never = kind;
      return unreachable;
    }
  }
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * The error object for `err` in `dialect`. v1.0 attaches `google.rpc`
 * details (`BadRequest` naming the field, else `ErrorInfo`); v0.3 a plain
 * `data` object. Both use the same numbers: v0.3 has no -32009 of its own,
 * and a version failure is answered before a dialect is chosen anyway.
 */
export function toJsonRpcError(err: A2aError, dialect: Dialect): JsonRpcErrorObject {
  const { code, reason } = v1Code(err.kind);
  if (dialect === '0.3') {
    const data: Record<string, unknown> = {};
    if (err.field) data.field = err.field;
    if (err.metadata) Object.assign(data, err.metadata);
    return Object.keys(data).length ? { code, message: err.message, data } : { code, message: err.message };
  }
  const details: Record<string, unknown>[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason,
      domain: 'a2a-protocol.org',
      ...(err.metadata ? { metadata: err.metadata } : {}),
    },
  ];
  if (err.field) {
    details.unshift({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: err.field, description: err.message }],
    });
  }
  return { code, message: err.message, data: details };
}
