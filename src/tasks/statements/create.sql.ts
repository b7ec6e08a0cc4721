import type { MessageJson } from '../../common/a2a-json.js';
import type { Statement } from '../../database/sql.service.js';
import { lastInputOf, type Folded } from '../repositories/merged-creation.js';
import type { Lease, NewTask } from '../repositories/task-log.types.js';
import type { TaskEventBody } from '../task-events.js';
import { isRunning } from '../task-state.js';
import { FILE_RECORD, fileRow, pushInsert, pushRow, RUNNING_SQL, statusTimestamp } from './fragments.sql.js';
import { callsOf, requestsCte, usageCtes } from './usage.sql.js';

/**
 * A message of the row (in its history, or its status message) that one of the record's events carries already
 * goes as that event's place among them (1-based), not as a second copy (`messageRef`): a reply is in the final
 * status event, the status message and the history, the user's message in its event and the history. The
 * statement takes it from the event; anything else is the message itself.
 */
const messageAt = (v: string): string =>
  `CASE WHEN jsonb_typeof(${v}) = 'number' THEN r.events -> ((${v})::int - 1) -> 'payload' -> 'message' ELSE ${v} END`;

/**
 * The history is made with `to_jsonb(array_agg(…))`, not `jsonb_agg`: the embedded database's `jsonb_agg` takes
 * time that grows with the square of an object's keys (a message whose metadata has 80,000 keys: 5 s, every other
 * request waiting, as it runs in the server's process), where `to_jsonb(array_agg(…))` takes 0.1 s, and no longer
 * for a short history.
 */
const X = `x AS (
    SELECT r.*,
           (SELECT COALESCE(to_jsonb(array_agg(${messageAt('h.m')} ORDER BY h.o)), '[]'::jsonb)
              FROM jsonb_array_elements(r.history_refs) WITH ORDINALITY AS h(m, o)) AS history,
           ${messageAt('r.status_ref')} AS status_message
      FROM jsonb_to_recordset($1::jsonb) AS r(i int, task_id varchar, tenant_id uuid, agent_id varchar,
      context_id varchar, state varchar, status_at timestamptz, history_refs jsonb, metadata jsonb, n int, last_input int,
      owner varchar, lease_ms int, message_id varchar, message_hash varchar, events jsonb, files jsonb, status_ref jsonb,
      error_message text, artifacts jsonb, input_tokens int, output_tokens int, cap int, calls jsonb, count_request boolean,
      push jsonb)
  )`;

/** The row insert of `source`'s records, and their events (CTEs `t` and `e`). */
const insertTasks = (source: string): string => `t AS (
    INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, metadata, last_seq,
                           last_input_seq, owner_instance, lease_expires_at, message_id, message_hash, status_message, error_message,
                           artifacts, input_tokens, output_tokens, history_bytes, artifacts_bytes, extra_bytes)
    SELECT task_id, tenant_id, agent_id, context_id, state, COALESCE(status_at, date_trunc('milliseconds', now())),
           history, metadata, n, last_input, owner,
           CASE WHEN owner IS NULL THEN NULL ELSE now() + make_interval(secs => lease_ms / 1000.0) END, message_id, message_hash,
           status_message, COALESCE(error_message, ''), COALESCE(artifacts, '[]'::jsonb), COALESCE(input_tokens, 0),
           COALESCE(output_tokens, 0), octet_length(history::text), COALESCE(octet_length(artifacts::text), 2),
           octet_length(metadata::text) + COALESCE(octet_length(status_message::text), 0)
      FROM ${source} ORDER BY i
    RETURNING task_id
  ), e AS (
    INSERT INTO task_events (task_id, seq, kind, payload)
    SELECT x.task_id, ev.ord::int, ev.value->>'kind', ev.value->'payload'
      FROM t JOIN x ON x.task_id = t.task_id, jsonb_array_elements(x.events) WITH ORDINALITY AS ev(value, ord)
  )`;

/**
 * New tasks with their first events, many in one statement — and, for a
 * task whose run wrote before the statement was sent, the run's events and
 * the row as they left it (state, status, artifacts, tokens, lease). Built in
 * four shapes (`createStatement` picks one per batch), each a prepared
 * statement of its own: a batch pays only for the parts it uses (an unused
 * part still costs its executor nodes: the full statement for one task that
 * needs none of them is about 40% more of the database's work).
 *
 * `capped`: a task that starts a run is admitted only under its tenant's
 * running-task cap (`cap`), counted by the database over every replica: the
 * counts of the tenants concerned are locked (`tenant_running` FOR UPDATE)
 * and what fits goes in, in submission order; `refused` lists the rest,
 * which wrote nothing. A task created already settled (its run ended before
 * the statement was sent) starts no run and is never refused.
 *
 * `extras`: the task's files; the push notification config its message
 * carries (delivered from the first event); the model calls of merged usage
 * events, accounted with it; and each task counted as a message taken
 * (request budgets, `usage.sql.ts`).
 *
 * No notice: nobody can watch a task before its creation commits.
 * $1: the tasks (`createRecord`).
 */
function createStatementOf(capped: boolean, extras: boolean): Statement {
  const rows = capped ? 'ok' : 'x';
  const cap = capped
    ? `, locked AS (
    -- The running counts of the tenants this statement starts runs for, locked until commit: FOR UPDATE reads the
    -- latest count, whatever the statement's snapshot. Locked in tenant order, like the triggers that count.
    SELECT r.tenant_id, r.running FROM tenant_running r
     WHERE r.tenant_id IN (SELECT tenant_id FROM x WHERE state IN ${RUNNING_SQL})
     ORDER BY r.tenant_id FOR UPDATE
  ), ranked AS (
    SELECT x.*, CASE WHEN x.cap > 0 AND x.state IN ${RUNNING_SQL}
      THEN row_number() OVER (PARTITION BY x.tenant_id, x.cap > 0 AND x.state IN ${RUNNING_SQL} ORDER BY x.i) END AS rank
      FROM x
  ), ok AS (
    -- What fits under each tenant's running-task cap, in submission order; the rest is refused.
    SELECT ranked.* FROM ranked LEFT JOIN locked ON locked.tenant_id = ranked.tenant_id
     WHERE ranked.rank IS NULL OR ranked.rank + COALESCE(locked.running, 0) <= ranked.cap
  )`
    : '';
  const more = extras
    ? `, f AS (
    INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
    SELECT ff.id, x.tenant_id, x.task_id, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
      FROM t JOIN x ON x.task_id = t.task_id, jsonb_to_recordset(COALESCE(x.files, '[]'::jsonb)) AS ${FILE_RECORD}
  ), pc AS (
    ${pushInsert('x.push', 'x.task_id', 'x.tenant_id', '0', 't JOIN x ON x.task_id = t.task_id')}
  )${requestsCte('SELECT x.tenant_id, x.agent_id FROM t JOIN x ON x.task_id = t.task_id WHERE x.count_request')}${usageCtes(
    'SELECT x.tenant_id, x.task_id, x.calls FROM t JOIN x ON x.task_id = t.task_id WHERE x.calls IS NOT NULL',
  )}`
    : '';
  const refused = capped
    ? `(SELECT COALESCE(array_agg(x.i), '{}') FROM x WHERE x.i NOT IN (SELECT i FROM ok))`
    : `'{}'::int[]`;
  return {
    name: `arbiter_task_create${capped ? '_capped' : ''}${extras ? '_extras' : ''}`,
    text: `WITH ${X}${cap}, ${insertTasks(rows)}${more}
  SELECT now() AS at, count(*)::int AS n, ${refused} AS refused FROM t`,
  };
}

const CREATES = [
  createStatementOf(false, false),
  createStatementOf(false, true),
  createStatementOf(true, false),
  createStatementOf(true, true),
] as const;

/** Whether a creation record starts a run under a running-task cap. */
const capped = (r: ReturnType<typeof createRecord>): boolean => (r.cap as number) > 0 && isRunning(r.state as string);
/** Whether a creation record has files, a push config, model calls or a request to count. */
const extras = (r: ReturnType<typeof createRecord>): boolean =>
  r.files !== undefined || r.push !== undefined || r.calls !== undefined || r.count_request === true;

/** The creation statement for a batch of `createRecord`s: the shape with the parts the batch needs. */
export const createStatement = (records: readonly ReturnType<typeof createRecord>[]): Statement =>
  CREATES[(records.some(capped) ? 2 : 0) + (records.some(extras) ? 1 : 0)];

/** `m` as a creation record sends it: the place (1-based) of the event that carries this very object, else `m`. */
function messageRef(m: MessageJson, events: readonly TaskEventBody[]): MessageJson | number {
  for (let k = 0; k < events.length; k++) {
    const e = events[k];
    if ((e.kind === 'message' || e.kind === 'status') && e.payload.message === m) return k + 1;
  }
  return m;
}

/**
 * One creation (with the appends folded into it, `f`) as a row of CREATE's `x`; `i` is its place in the batch.
 * A field the statement would read as NULL or as its default (no owner, no files, no error, no cap …) is left
 * out: `jsonb_to_recordset` reads a missing field as NULL.
 */
export function createRecord(
  i: number,
  task: NewTask,
  first: TaskEventBody[],
  lease: Lease,
  f: Folded,
): Record<string, unknown> {
  const r: Record<string, unknown> = {
    i,
    task_id: task.taskId,
    tenant_id: task.tenantId,
    agent_id: task.agentId,
    context_id: task.contextId,
    state: f.state,
    status_at: statusTimestamp(f.events),
    history_refs: f.history.map((m) => messageRef(m, f.events)),
    metadata: task.metadata,
    n: f.events.length,
    last_input: lastInputOf(first),
    lease_ms: f.lease?.ms ?? lease.ms,
    message_id: task.messageId,
    message_hash: task.messageHash,
    events: f.events,
  };
  if (f.lease?.owner) r.owner = f.lease.owner;
  if (f.files.length) r.files = f.files.map(fileRow);
  if (f.statusMessage) r.status_ref = messageRef(f.statusMessage, f.events);
  if (f.errorMessage !== null) r.error_message = f.errorMessage;
  if (f.artifacts) r.artifacts = f.artifacts;
  if (f.tokens) {
    r.input_tokens = f.tokens.input;
    r.output_tokens = f.tokens.output;
  }
  if (task.runningCap) r.cap = task.runningCap;
  const calls = callsOf(f.events);
  if (calls) r.calls = calls;
  if (task.countRequest) r.count_request = true;
  if (task.push) r.push = pushRow(task.push);
  return r;
}
