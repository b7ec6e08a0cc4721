import type { Statement } from '../../database/sql.service.js';
import type { TaskRowChange } from '../repositories/task-log.types.js';
import type { TaskEventBody } from '../task-events.js';
import { allowedFrom, NON_TERMINAL_STATES } from '../task-state.js';
import { FILE_RECORD, fileRow, statusTimestamp } from './fragments.sql.js';
import { notifyWrites, TASK_AND_SEQ } from './notify.sql.js';
import { callsOf, usageCtes } from './usage.sql.js';

/** The task row's columns (aliased `a`) as a `TaskRow`; the heavy ones only when the append settled the task. */
const ROW = `a.tenant_id AS "tenantId", a.agent_id AS "agentId", a.context_id AS "contextId", a.state,
  a.created_at AS "createdAt", a.updated_at AS "updatedAt", a.error_message AS "errorMessage",
  a.input_tokens AS "inputTokens", a.output_tokens AS "outputTokens",
  CASE WHEN x.state IS NOT NULL THEN a.status_message END AS "statusMessage",
  CASE WHEN x.state IS NOT NULL THEN a.history END AS history,
  CASE WHEN x.state IS NOT NULL THEN a.artifacts END AS artifacts,
  CASE WHEN x.state IS NOT NULL THEN a.metadata END AS metadata`;

/**
 * Appends for many tasks in one statement: each item moves its task row
 * along (only from the states it allows, and only if the task has no newer
 * input than `inputs_upto`) and inserts its events after the row's
 * `last_seq`; an item whose condition fails writes nothing and returns no
 * row. A history is rewritten only by an item that adds to it, and the
 * content sizes (`history_bytes`, `artifacts_bytes`, `extra_bytes`) follow
 * what changed. One notice on commit names every task written. The model
 * calls its usage events report are accounted with it (`usage.sql.ts`).
 * $1: the items (`appendRecord`), $2: this replica's id.
 */
export const APPEND: Statement = {
  name: 'arbiter_task_append',
  text: `WITH x AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, task_id varchar, events jsonb, n int, state varchar,
      set_status boolean, status_message jsonb, error_message text, history jsonb, artifacts jsonb,
      input_tokens int, output_tokens int, allowed text[], status_at timestamptz, set_lease boolean,
      lease_owner varchar, lease_ms int, inputs_upto int, files jsonb, calls jsonb, metadata jsonb, owner varchar)
  ), t AS (
    UPDATE a2a_tasks a SET
      last_seq = a.last_seq + x.n,
      state = COALESCE(x.state, a.state),
      updated_at = CASE WHEN x.state IS NOT NULL
        THEN COALESCE(x.status_at, date_trunc('milliseconds', clock_timestamp())) ELSE a.updated_at END,
      status_message = CASE WHEN x.set_status THEN x.status_message ELSE a.status_message END,
      error_message = COALESCE(x.error_message, a.error_message),
      history = CASE WHEN x.history IS NULL THEN a.history ELSE a.history || x.history END,
      history_bytes = a.history_bytes + COALESCE(octet_length(x.history::text), 0),
      artifacts = COALESCE(x.artifacts, a.artifacts),
      metadata = CASE WHEN x.metadata IS NULL THEN a.metadata ELSE a.metadata || x.metadata END,
      artifacts_bytes = COALESCE(octet_length(x.artifacts::text), a.artifacts_bytes),
      extra_bytes = CASE WHEN x.set_status
        THEN octet_length(a.metadata::text) + COALESCE(octet_length(x.status_message::text), 0)
        ELSE a.extra_bytes END,
      input_tokens = COALESCE(x.input_tokens, a.input_tokens),
      output_tokens = COALESCE(x.output_tokens, a.output_tokens),
      owner_instance = CASE WHEN x.set_lease THEN x.lease_owner ELSE a.owner_instance END,
      lease_expires_at = CASE WHEN NOT x.set_lease THEN a.lease_expires_at
        WHEN x.lease_owner IS NULL THEN NULL ELSE now() + make_interval(secs => x.lease_ms / 1000.0) END
    FROM x
    -- ANY(ARRAY(…)) as well as the join: the planner takes a function's rows for a hundred and would hash-join
    -- them against a scan of every task; an array of ids it looks up in the primary key.
    WHERE a.task_id = ANY(ARRAY(SELECT task_id FROM x)) AND a.task_id = x.task_id AND a.state = ANY(x.allowed)
      AND (x.inputs_upto IS NULL OR a.last_input_seq <= x.inputs_upto)
      AND (x.owner IS NULL OR a.owner_instance = x.owner)
    RETURNING x.i, x.n, x.events, x.files, x.calls, a.task_id, a.last_seq, ${ROW}
  ), f AS (
    INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
    SELECT ff.id, t."tenantId", t.task_id, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
      FROM t, jsonb_to_recordset(COALESCE(t.files, '[]'::jsonb)) AS ${FILE_RECORD}
  ), e AS (
    INSERT INTO task_events (task_id, seq, kind, payload)
    SELECT t.task_id, t.last_seq - t.n + ev.ord::int, ev.value->>'kind', ev.value->'payload'
      FROM t, jsonb_array_elements(t.events) WITH ORDINALITY AS ev(value, ord)
  ), n AS (
    SELECT ${notifyWrites('$2', `string_agg(${TASK_AND_SEQ}, '|')`)} AS sent
      FROM t HAVING count(*) > 0
  )${usageCtes(`SELECT t."tenantId" AS tenant_id, t.task_id, t.calls FROM t WHERE t.calls IS NOT NULL`)}
  SELECT t.i, t.task_id AS "taskId", t.last_seq AS "lastSeq", now() AS at,
    t."tenantId", t."agentId", t."contextId", t.state, t."createdAt", t."updatedAt", t."errorMessage",
    t."inputTokens", t."outputTokens", t."statusMessage", t.history, t.artifacts, t.metadata
  FROM t, n`,
};

/** One append as a row of APPEND's `x`; `i` is its place in the batch. */
export function appendRecord(
  i: number,
  taskId: string,
  events: TaskEventBody[],
  change: TaskRowChange,
): Record<string, unknown> {
  return {
    i,
    task_id: taskId,
    events,
    n: events.length,
    state: change.state ?? null,
    set_status: change.statusMessage !== undefined,
    status_message: change.statusMessage ?? null,
    error_message: change.errorMessage ?? null,
    history: change.historyAppend ?? null,
    artifacts: change.artifacts ?? null,
    input_tokens: change.tokens?.input ?? null,
    output_tokens: change.tokens?.output ?? null,
    allowed: change.state ? allowedFrom(change.state) : NON_TERMINAL_STATES,
    // The status timestamp clients see in the event is the one stored on the row.
    status_at: statusTimestamp(events),
    set_lease: change.lease !== undefined,
    lease_owner: change.lease?.owner ?? null,
    lease_ms: change.lease?.ms ?? 0,
    inputs_upto: change.inputsUpTo ?? null,
    files: change.files?.length ? change.files.map(fileRow) : null,
    calls: callsOf(events),
    metadata: change.metadata ?? null,
    owner: change.owner ?? null,
  };
}
