import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import { UPSTREAM_ERROR, type UpstreamErrorType } from '../../orchestrator/run-event.js';

/**
 * A remote-backed agent's task that failed because its upstream refused the send (kept in its metadata,
 * `x-arbiter.upstream_error`), as the error a waiting caller is answered in its own binding and dialect: the
 * upstream's A2A type where there is the same, else internal (retryable for a transient failure: HTTP 503 and
 * gRPC UNAVAILABLE), the upstream's message, and the task's id in the `ErrorInfo` metadata (`task_id`) so that the
 * failed task can be read. Undefined for any other task.
 */
export function upstreamRefusal(task: TaskSnapshot): A2aError | undefined {
  if (task.state !== 'TASK_STATE_FAILED') return undefined;
  const r = task.metadata?.[UPSTREAM_ERROR] as { type?: unknown; message?: unknown } | undefined;
  if (!r || typeof r !== 'object' || typeof r.message !== 'string' || typeof r.type !== 'string') return undefined;
  const meta = { task_id: task.id };
  const type = r.type as UpstreamErrorType;
  switch (type) {
    case 'invalid_params':
    case 'content_type_not_supported':
    case 'unsupported_operation':
    case 'internal':
      return new A2aError(type, r.message, undefined, meta);
    case 'unavailable':
      return new A2aError('internal', r.message, undefined, { ...meta, retryable: 'true' });
    default:
      return new A2aError('internal', r.message, undefined, meta);
  }
}
