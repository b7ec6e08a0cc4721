import { Injectable } from '@nestjs/common';
import { GroupCommit } from '../../database/group-commit.js';
import { Sql, type Statement } from '../../database/sql.service.js';
import { InstanceIdentity } from '../runs/instance-identity.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import { allowedFrom, isSettled, NON_TERMINAL_STATES, type TaskStateName } from '../task-state.js';
import { fileRow, statusTimestamp, TASK_EVENTS_CHANNEL, type Lease } from './sql.js';
import type { TaskRowChange } from './task-event.repository.js';
import type { NewTask, TaskRow } from './task.repository.js';
import { Metrics } from '../../metrics/metrics.service.js';

/** What an append committed: its events, and the task row after it when the append changed the state. */
export interface Appended {
  events: StoredTaskEvent[];
  row?: TaskRow;
}

interface AppendItem {
  taskId: string;
  events: TaskEventBody[];
  change: TaskRowChange;
}

interface CreateItem {
  task: NewTask;
  first: TaskEventBody[];
  state: TaskStateName;
  lease: Lease;
  files: NewTaskFile[];
}

/** Most file bytes (base64) one statement carries; heavier writes go in smaller batches, or alone. */
const MAX_BATCH_FILE_BYTES = 16 * 1024 * 1024;
/** Most writes in one statement; a batch waits for nothing but the statement before it. */
const MAX_BATCH = 64;
const IN_FLIGHT = 2;

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
 * row. One notice on commit names every task written.
 */
const APPEND: Statement = {
  name: 'arbiter_task_append',
  text: `WITH x AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, task_id varchar, events jsonb, n int, state varchar,
      set_status boolean, status_message jsonb, error_message text, history jsonb, artifacts jsonb,
      input_tokens int, output_tokens int, allowed text[], status_at timestamptz, set_lease boolean,
      lease_owner varchar, lease_ms int, inputs_upto int, files jsonb)
  ), t AS (
    UPDATE a2a_tasks a SET
      last_seq = a.last_seq + x.n,
      state = COALESCE(x.state, a.state),
      updated_at = CASE WHEN x.state IS NOT NULL
        THEN COALESCE(x.status_at, date_trunc('milliseconds', clock_timestamp())) ELSE a.updated_at END,
      status_message = CASE WHEN x.set_status THEN x.status_message ELSE a.status_message END,
      error_message = COALESCE(x.error_message, a.error_message),
      history = a.history || COALESCE(x.history, '[]'::jsonb),
      artifacts = COALESCE(x.artifacts, a.artifacts),
      input_tokens = COALESCE(x.input_tokens, a.input_tokens),
      output_tokens = COALESCE(x.output_tokens, a.output_tokens),
      owner_instance = CASE WHEN x.set_lease THEN x.lease_owner ELSE a.owner_instance END,
      lease_expires_at = CASE WHEN NOT x.set_lease THEN a.lease_expires_at
        WHEN x.lease_owner IS NULL THEN NULL ELSE now() + make_interval(secs => x.lease_ms / 1000.0) END
    FROM x
    WHERE a.task_id = x.task_id AND a.state = ANY(x.allowed)
      AND (x.inputs_upto IS NULL OR a.last_input_seq <= x.inputs_upto)
    RETURNING x.i, x.n, x.events, x.files, a.task_id, a.last_seq, ${ROW}
  ), f AS (
    INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
    SELECT ff.id, t."tenantId", t.task_id, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
      FROM t, jsonb_to_recordset(COALESCE(t.files, '[]'::jsonb)) AS ff(id uuid, media_type varchar, filename varchar, size int, b64 text)
  ), e AS (
    INSERT INTO task_events (task_id, seq, kind, payload)
    SELECT t.task_id, t.last_seq - t.n + ev.ord::int, ev.value->>'kind', ev.value->'payload'
      FROM t, jsonb_array_elements(t.events) WITH ORDINALITY AS ev(value, ord)
  ), n AS (
    SELECT pg_notify('${TASK_EVENTS_CHANNEL}', $2::text || '|' || string_agg(t.task_id || '|' || t.last_seq, '|')) AS sent
      FROM t HAVING count(*) > 0
  )
  SELECT t.i, t.task_id AS "taskId", t.last_seq AS "lastSeq", now() AS at,
    t."tenantId", t."agentId", t."contextId", t.state, t."createdAt", t."updatedAt", t."errorMessage",
    t."inputTokens", t."outputTokens", t."statusMessage", t.history, t.artifacts, t.metadata
  FROM t, n`,
};

/** New tasks with their first events, many in one statement. */
const CREATE: Statement = {
  name: 'arbiter_task_create',
  text: `WITH x AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, task_id varchar, tenant_id uuid, agent_id varchar,
      context_id varchar, state varchar, status_at timestamptz, history jsonb, metadata jsonb, n int, last_input int,
      owner varchar, lease_ms int, message_id varchar, events jsonb, files jsonb)
  ), t AS (
    INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, metadata, last_seq,
                           last_input_seq, owner_instance, lease_expires_at, message_id)
    SELECT task_id, tenant_id, agent_id, context_id, state, COALESCE(status_at, date_trunc('milliseconds', now())),
           history, metadata, n, last_input, owner, now() + make_interval(secs => lease_ms / 1000.0), message_id
      FROM x ORDER BY i
    RETURNING task_id
  ), f AS (
    INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
    SELECT ff.id, x.tenant_id, x.task_id, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
      FROM t JOIN x ON x.task_id = t.task_id, jsonb_to_recordset(COALESCE(x.files, '[]'::jsonb)) AS ff(id uuid, media_type varchar, filename varchar, size int, b64 text)
  ), e AS (
    INSERT INTO task_events (task_id, seq, kind, payload)
    SELECT x.task_id, ev.ord::int, ev.value->>'kind', ev.value->'payload'
      FROM t JOIN x ON x.task_id = t.task_id, jsonb_array_elements(x.events) WITH ORDINALITY AS ev(value, ord)
  )
  SELECT now() AS at, count(*)::int AS n FROM t`,
};

/**
 * The engine's writes that add events — task creation and appends — by
 * group commit: the writes of concurrent runs in the same tick go to
 * PostgreSQL as one statement, and each caller gets its part once it is
 * committed. Writes of one task never share a batch and commit in order.
 */
@Injectable()
export class TaskWrites {
  private readonly appends: GroupCommit<AppendItem, Appended | null>;
  private readonly creates: GroupCommit<CreateItem, StoredTaskEvent[]>;
  /** Sizes of the batches sent, for the benchmark and the metrics. */
  readonly batches = { statements: 0, writes: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly identity: InstanceIdentity,
    private readonly metrics: Metrics,
  ) {
    const onBatch = (size: number): void => {
      this.batches.statements++;
      this.batches.writes += size;
      metrics.writeBatch.observe(size);
    };
    const options = { maxBatch: MAX_BATCH, maxInFlight: IN_FLIGHT, onBatch, maxBatchWeight: MAX_BATCH_FILE_BYTES };
    const bytes = (files: readonly NewTaskFile[] | undefined): number =>
      (files ?? []).reduce((n, f) => n + f.b64.length, 0);
    this.appends = new GroupCommit((items) => this.appendMany(items), {
      ...options,
      keyOf: (i) => i.taskId,
      weightOf: (i) => bytes(i.change.files),
    });
    this.creates = new GroupCommit((items) => this.createMany(items), {
      ...options,
      keyOf: (i) => i.task.taskId,
      weightOf: (i) => bytes(i.files),
    });
  }

  /**
   * Appends events and applies `change` atomically. Null when the task is
   * not in a state that allows it (terminal, or a transition the state
   * machine forbids) or `inputsUpTo` is stale: then nothing was written.
   */
  append(taskId: string, events: TaskEventBody[], change: TaskRowChange = {}): Promise<Appended | null> {
    if (events.length === 0) return Promise.resolve({ events: [] });
    return this.appends.submit({ taskId, events, change });
  }

  /**
   * Inserts a task and its first events: the row in `state`, `last_seq` = the number of events, leased;
   * `files` (the message's stored files) go in the same statement.
   */
  create(
    task: NewTask,
    first: TaskEventBody[],
    state: TaskStateName,
    lease: Lease,
    files: NewTaskFile[] = [],
  ): Promise<StoredTaskEvent[]> {
    return this.creates.submit({ task, first, state, lease, files });
  }

  private async appendMany(items: AppendItem[]): Promise<(Appended | null)[]> {
    const input = items.map(({ taskId, events, change }, i) => ({
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
    }));
    const rows = await this.sql.query<TaskRow & { i: number; at: Date }>(APPEND, [
      JSON.stringify(input),
      this.identity.id,
    ]);
    const out: (Appended | null)[] = items.map(() => null);
    for (const r of rows) {
      const item = items[r.i];
      if (!item) continue;
      const { i: _i, at, ...row } = r;
      const first = r.lastSeq - item.events.length;
      const createdAt = at.toISOString();
      const events = item.events.map((e, k) => ({ ...e, taskId: item.taskId, seq: first + k + 1, createdAt }));
      out[r.i] = item.change.state ? { events: events, row } : { events: events };
      if (item.change.state && isSettled(item.change.state)) {
        this.metrics.tasksEnded.inc({ state: item.change.state, agent: this.metrics.agent(row.agentId) });
      }
    }
    return out;
  }

  private async createMany(items: CreateItem[]): Promise<StoredTaskEvent[][]> {
    const input = items.map(({ task, first, state, lease, files }, i) => ({
      i,
      task_id: task.taskId,
      tenant_id: task.tenantId,
      agent_id: task.agentId,
      context_id: task.contextId,
      state,
      status_at: statusTimestamp(first),
      history: first.flatMap((e) => (e.kind === 'message' ? [e.payload.message] : [])),
      metadata: task.metadata,
      n: first.length,
      last_input: first.map((e) => e.kind).lastIndexOf('message') + 1,
      owner: lease.owner,
      lease_ms: lease.ms,
      message_id: task.messageId,
      events: first,
      files: files.length ? files.map(fileRow) : null,
    }));
    const [r] = await this.sql.query<{ at: Date; n: number }>(CREATE, [JSON.stringify(input)]);
    if (!r || r.n !== items.length) throw new Error(`created ${r?.n ?? 0} of ${items.length} tasks`);
    const createdAt = r.at.toISOString();
    return items.map(({ task, first }) => first.map((e, k) => ({ ...e, taskId: task.taskId, seq: k + 1, createdAt })));
  }
}
