import { DomainError, type ErrorCode } from '../common/errors.js';

/** What the task engine refuses; each surface (REST, JSON-RPC) translates the reason at its edge. */
export type TaskErrorCode =
  | 'task_not_found'
  | 'task_not_cancelable'
  | 'task_terminal'
  | 'invalid_params'
  /** A live subscriber fell behind by more than its buffer; it resumes after `resumeAfter`. */
  | 'subscriber_overflow';

const REST_CODE: Record<TaskErrorCode, ErrorCode> = {
  task_not_found: 'not_found',
  task_not_cancelable: 'conflict',
  task_terminal: 'conflict',
  invalid_params: 'validation_failed',
  subscriber_overflow: 'unavailable',
};

/** The engine's one error type: a reason from `TaskErrorCode`, and the REST code it maps to. */
export class TaskError extends DomainError {
  constructor(
    readonly reason: TaskErrorCode,
    message: string,
    readonly field?: string,
    /** For `subscriber_overflow`: the seq of the last event the subscriber was given. */
    readonly resumeAfter?: number,
  ) {
    super(REST_CODE[reason], message, field ? [{ field, messages: [message] }] : undefined);
    this.name = 'TaskError';
  }

  static override notFound(taskId: string): TaskError {
    return new TaskError(
      'task_not_found',
      `task '${taskId.slice(0, 64)}' not found (ended tasks are deleted after the retention period)`,
    );
  }

  static notCancelable(taskId: string, state: string): TaskError {
    return new TaskError('task_not_cancelable', `task '${taskId}' is ${state} and cannot be canceled`);
  }

  static terminal(taskId: string, state: string): TaskError {
    return new TaskError('task_terminal', `task '${taskId}' is ${state}; a terminal task accepts no further messages`);
  }

  static invalidParams(field: string, problem: string): TaskError {
    return new TaskError('invalid_params', `${field} ${problem}`, field);
  }

  static overflow(resumeAfter: number): TaskError {
    return new TaskError(
      'subscriber_overflow',
      `the stream fell behind the task's events and was closed; resume after seq ${resumeAfter} ` +
        `(since_seq=${resumeAfter}, or Last-Event-ID: ${resumeAfter})`,
      undefined,
      resumeAfter,
    );
  }
}

/**
 * The refusal of a task that would pass its tenant's running-task cap (counted by the database, on every replica):
 * a new task, or an interrupted one resuming.
 */
export function runningCapReached(cap: number): DomainError {
  return DomainError.rateLimited(
    `running-task cap reached: this tenant may run ${cap} tasks at once; retry when one has finished`,
    1,
  );
}
