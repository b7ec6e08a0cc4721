/** A2A task states by their ProtoJSON names (spec §4.1.3), the form stored in `a2a_tasks.state`. */
export const TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
] as const;
export type TaskStateName = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: readonly TaskStateName[] = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
];
export const INTERRUPTED_STATES: readonly TaskStateName[] = ['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
/** States a run holds (its lease is renewed, the sweep judges it); they count against the running-task cap. */
export const RUNNING_STATES: readonly TaskStateName[] = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'];

export function isTaskState(s: string): s is TaskStateName {
  return (TASK_STATES as readonly string[]).includes(s);
}

export function isTerminal(s: string): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(s);
}

/** Waiting for input (or authorization): no run holds the task. */
export function isInterrupted(s: string): boolean {
  return (INTERRUPTED_STATES as readonly string[]).includes(s);
}

/** A run holds the task: it counts against the running-task cap. */
export function isRunning(s: string): boolean {
  return (RUNNING_STATES as readonly string[]).includes(s);
}

/** Terminal or interrupted: where a blocking send returns (spec §3.2.2). */
export function isSettled(s: string): boolean {
  return isTerminal(s) || (INTERRUPTED_STATES as readonly string[]).includes(s);
}

/**
 * The states a task may move to `to` from. States only move forward; a
 * terminal state has no way out (the database enforces that too).
 */
export function allowedFrom(to: TaskStateName): TaskStateName[] {
  switch (to) {
    case 'TASK_STATE_SUBMITTED':
      return [];
    case 'TASK_STATE_WORKING':
      return ['TASK_STATE_SUBMITTED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
    case 'TASK_STATE_INPUT_REQUIRED':
    case 'TASK_STATE_AUTH_REQUIRED':
      return ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'];
    case 'TASK_STATE_COMPLETED':
      return ['TASK_STATE_WORKING'];
    case 'TASK_STATE_FAILED':
    case 'TASK_STATE_CANCELED':
    case 'TASK_STATE_REJECTED':
      return ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
    default: {
      const unreachable: never = to;
      return unreachable;
    }
  }
}

export const NON_TERMINAL_STATES: TaskStateName[] = TASK_STATES.filter((s) => !isTerminal(s));
