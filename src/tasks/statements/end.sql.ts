import type { Params } from '../../database/sql-params.js';
import type { EndScope, StatusPayload } from '../repositories/task-log.types.js';
import type { ArtifactJson } from '../../common/a2a-json.js';
import { NON_TERMINAL_STATES, RUNNING_STATES } from '../task-state.js';
import { EVENT_COLUMNS } from './fragments.sql.js';
import { notifyWrites, TASK_AND_SEQ } from './notify.sql.js';

/**
 * A task that follows an upstream task (a remote-backed agent's, bound to it), on the task row aliased `alias`:
 * when its owner is gone, another replica takes it over instead of ending it (`LeaseRepository.claimFollowed`).
 */
export const FOLLOWED_SQL = (alias: string): string =>
  `(${alias}.metadata ->> 'x-arbiter.upstream_task_id') IS NOT NULL`;

/** The SQL condition of a scope on the task row aliased `a` (the state condition included). */
export function scopeSql(scope: EndScope, p: Params): string {
  switch (scope.kind) {
    case 'task': {
      const owned = scope.owner ? ` AND a.owner_instance = ${p.add(scope.owner)}` : '';
      return `a.task_id = ${p.add(scope.taskId)} AND a.tenant_id = ${p.add(scope.tenantId)} AND a.state = ANY(${p.add(NON_TERMINAL_STATES)}::text[])${owned}`;
    }
    case 'tenant':
      return `a.tenant_id = ${p.add(scope.tenantId)} AND a.state = ANY(${p.add(NON_TERMINAL_STATES)}::text[])`;
    case 'orphans': {
      const owner = p.add(scope.owner);
      const lost = scope.restarted
        ? `(a.owner_instance IS DISTINCT FROM ${owner} OR a.lease_expires_at < now())`
        : `(a.lease_expires_at < now() AND (a.owner_instance IS NULL
             OR (a.owner_instance = ANY(${p.add(scope.gone)}::varchar[])${scope.resumable ? ` AND NOT ${FOLLOWED_SQL('a')}` : ''})
             OR (a.owner_instance = ${owner} AND NOT a.task_id = ANY(${p.add(scope.held)}::varchar[]))))`;
      return `a.state = ANY(${p.add(RUNNING_STATES)}::text[]) AND ${lost}`;
    }
    default: {
      const unreachable: never = scope;
      return unreachable;
    }
  }
}

/**
 * Up to `limit` unfinished tasks in `scope`, locked for the rest of the
 * transaction, in task id order. One task waits for its lock (a write in
 * flight); for many, rows another transaction holds are skipped (SKIP
 * LOCKED), so two replicas ending the same tasks never wait on each other.
 */
export function lockCandidatesSql(scope: EndScope, limit: number, p: Params): string {
  return `SELECT a.task_id AS "taskId", a.tenant_id AS "tenantId", a.last_seq AS "lastSeq", a.artifacts
         FROM a2a_tasks a WHERE ${scopeSql(scope, p)}
        ORDER BY a.task_id LIMIT ${p.add(limit)} FOR UPDATE OF a${scope.kind === 'task' ? '' : ' SKIP LOCKED'}`;
}

/** Whether any unfinished task is left in `scope`. */
export function anyLeftSql(scope: EndScope, p: Params): string {
  return `SELECT 1 FROM a2a_tasks a WHERE ${scopeSql(scope, p)} LIMIT 1`;
}

/**
 * Ends the locked tasks (`lockCandidatesSql`) in one statement, each only
 * if it is still unfinished in `scope` (so exactly once): the terminal
 * `status` event after its last, its folded artifacts (and their size), no
 * lease, and one notice per task on commit. Returns the events written.
 */
export function endManySql(
  scope: EndScope,
  tasks: { taskId: string; artifacts: ArtifactJson[] }[],
  status: StatusPayload,
  instance: string,
  p: Params,
): string {
  const input = p.add(JSON.stringify(tasks.map((t) => ({ task_id: t.taskId, artifacts: t.artifacts }))));
  const where = scopeSql(scope, p);
  return `WITH x AS (SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(task_id varchar, artifacts jsonb)),
       t AS (
         UPDATE a2a_tasks a SET
           last_seq = a.last_seq + 1,
           state = ${p.add(status.state)},
           updated_at = ${p.add(status.timestamp)}::timestamptz,
           error_message = ${p.add(status.error ?? '')},
           artifacts = x.artifacts,
           artifacts_bytes = octet_length(x.artifacts::text),
           owner_instance = NULL,
           lease_expires_at = NULL
         FROM x WHERE a.task_id = ANY(ARRAY(SELECT task_id FROM x)) AND a.task_id = x.task_id AND ${where}
         RETURNING a.task_id, a.last_seq
       ), n AS (SELECT t.task_id, ${notifyWrites(p.add(instance), TASK_AND_SEQ)} AS sent FROM t)
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT t.task_id, t.last_seq, 'status', ${p.add(JSON.stringify(status))}::jsonb FROM t JOIN n ON n.task_id = t.task_id
       RETURNING ${EVENT_COLUMNS}`;
}
