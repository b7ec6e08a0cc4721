/**
 * The task log's change notices, written and read here. Every write that
 * adds events sends one in the same statement, so it goes out on commit and
 * only then: `<instance>|<task id>|<last seq>`, or several
 * `<task id>|<last seq>` pairs after the instance (a group commit names all
 * its tasks in one notice). `ReplicaNotices` hears them.
 */
export const TASK_EVENTS_CHANNEL = 'arbiter_task_events';

/** One task and its last seq, from the written rows aliased `t`, as a notice names them. */
export const TASK_AND_SEQ = `t.task_id || '|' || t.last_seq`;

/**
 * The `pg_notify` call of a write: `instance` is the SQL of the writing
 * replica's id (a parameter), `tasks` the SQL of the `<task id>|<last seq>`
 * list it names (`TASK_AND_SEQ`, or a `string_agg` of it for many tasks).
 */
export function notifyWrites(instance: string, tasks: string): string {
  return `pg_notify('${TASK_EVENTS_CHANNEL}', ${instance}::text || '|' || ${tasks})`;
}

/**
 * Calls `each` with every task and seq a notice names, unless replica
 * `self` sent it (its own writes reach its watchers in process).
 */
export function readNotice(payload: string, self: string, each: (taskId: string, seq: number) => void): void {
  const [instance, ...pairs] = payload.split('|');
  if (!instance || instance === self) return;
  for (let k = 0; k + 1 < pairs.length; k += 2) {
    const taskId = pairs[k];
    const seq = Number(pairs[k + 1]);
    if (taskId && Number.isSafeInteger(seq)) each(taskId, seq);
  }
}
