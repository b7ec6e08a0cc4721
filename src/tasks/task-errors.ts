/** Task-level failures; each wire dialect maps `code` to its own error number. */
export type TaskErrorCode =
  | 'task_not_found'
  | 'task_not_cancelable'
  | 'task_terminal'
  | 'invalid_params'
  | 'content_type_not_supported'
  | 'unsupported_operation'
  | 'push_not_supported'
  | 'extended_card_not_configured';

export class TaskError extends Error {
  constructor(
    readonly code: TaskErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'TaskError';
  }

  static notFound(taskId: string): TaskError {
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
}

/** A live subscriber fell behind by more than its buffer: its stream ends; it resumes from `resumeAfter`. */
export class SubscriberOverflowError extends Error {
  constructor(
    readonly taskId: string,
    /** The seq of the last event the subscriber was given. */
    readonly resumeAfter: number,
  ) {
    super(
      `the stream fell behind the task's events and was closed; resume after seq ${resumeAfter} ` +
        `(since_seq=${resumeAfter}, or Last-Event-ID: ${resumeAfter})`,
    );
    this.name = 'SubscriberOverflowError';
  }
}
