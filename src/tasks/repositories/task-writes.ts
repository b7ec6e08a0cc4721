import { Injectable } from '@nestjs/common';
import { GroupCommit } from '../../database/group-commit.js';
import { Sql, type Statement } from '../../database/sql.service.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { stored, type StoredTaskEvent, type TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import { allowedFrom, isSettled, NON_TERMINAL_STATES, type TaskStateName } from '../task-state.js';
import { fileRow, RUNNING_SQL, statusTimestamp, TASK_EVENTS_CHANNEL, type Lease } from './sql.js';
import type { TaskRowChange } from './task-event.repository.js';
import type { NewTask, TaskRow } from './task.repository.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { isStatementRefused } from '../../common/db-errors.js';
import { DomainError } from '../../common/errors.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';

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

/** An append made while its task's creation waited for its statement: written by that statement. */
interface MergedAppend {
  events: TaskEventBody[];
  change: TaskRowChange;
  resolve: (appended: Appended | null) => void;
}

interface CreateItem {
  task: NewTask;
  first: TaskEventBody[];
  state: TaskStateName;
  lease: Lease;
  files: NewTaskFile[];
  /** Appends to the new task made before its statement was sent, in order. */
  tail: MergedAppend[];
  /** Set when its statement is built: later appends wait for it to commit, then follow it. */
  sent: boolean;
}

/** A creation until its statement has committed (or failed). */
interface PendingCreate {
  item: CreateItem;
  committed: Promise<unknown>;
}

/** The row's fields an append can change. */
interface RowState {
  state: TaskStateName;
  history: MessageJson[];
  statusMessage: MessageJson | null;
  errorMessage: string | null;
  artifacts: ArtifactJson[] | null;
  tokens: { input: number; output: number } | null;
}

/** What a creation writes with the appends merged into it. */
interface Folded extends RowState {
  events: TaskEventBody[];
  lease: Lease | null;
  files: NewTaskFile[];
  /**
   * Per merged append: where its events start in `events`, and the row after
   * it when it changed the state; null when its condition refused it.
   */
  parts: ({ from: number; row?: RowState } | null)[];
}

/**
 * A creation with the appends merged into it, applied in order as the
 * APPEND statement would apply them to the new row: each only from a state
 * it allows and only if the task has no newer input than it took; one that
 * is refused writes nothing.
 */
function fold(item: CreateItem): Folded {
  const lastInput = item.first.map((e) => e.kind).lastIndexOf('message') + 1;
  const f: Folded = {
    state: item.state,
    events: [...item.first],
    history: item.first.flatMap((e) => (e.kind === 'message' ? [e.payload.message] : [])),
    statusMessage: null,
    errorMessage: null,
    artifacts: null,
    tokens: null,
    lease: item.lease,
    files: [...item.files],
    parts: [],
  };
  for (const { events, change: c } of item.tail) {
    const allowed = c.state ? allowedFrom(c.state) : NON_TERMINAL_STATES;
    if (!allowed.includes(f.state) || (c.inputsUpTo !== undefined && lastInput > c.inputsUpTo)) {
      f.parts.push(null);
      continue;
    }
    const from = f.events.length;
    f.events.push(...events);
    if (c.state) f.state = c.state;
    if (c.statusMessage !== undefined) f.statusMessage = c.statusMessage;
    if (c.errorMessage !== undefined) f.errorMessage = c.errorMessage;
    if (c.historyAppend) f.history.push(...c.historyAppend);
    if (c.artifacts) f.artifacts = c.artifacts;
    if (c.tokens) f.tokens = c.tokens;
    if (c.lease !== undefined) f.lease = c.lease;
    if (c.files?.length) f.files.push(...c.files);
    const { state, statusMessage, errorMessage, artifacts, tokens } = f;
    f.parts.push({
      from,
      ...(c.state ? { row: { state, statusMessage, errorMessage, artifacts, tokens, history: [...f.history] } } : {}),
    });
  }
  return f;
}

/** The refusal of a task that would pass its tenant's running-task cap (counted by the database, on every replica). */
const runningCapReached = (cap: number): DomainError =>
  DomainError.rateLimited(
    `running-task cap reached: this tenant may run ${cap} tasks at once; retry when one has finished`,
    1,
  );

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
      history = CASE WHEN x.history IS NULL THEN a.history ELSE a.history || x.history END,
      history_bytes = a.history_bytes + COALESCE(octet_length(x.history::text), 0),
      artifacts = COALESCE(x.artifacts, a.artifacts),
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

/**
 * New tasks with their first events, many in one statement — and, for a
 * task whose run wrote before the statement was sent, the run's events and
 * the row as they left it (state, status, artifacts, tokens, lease).
 */
const CREATE: Statement = {
  name: 'arbiter_task_create',
  text: `WITH x AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(i int, task_id varchar, tenant_id uuid, agent_id varchar,
      context_id varchar, state varchar, status_at timestamptz, history jsonb, metadata jsonb, n int, last_input int,
      owner varchar, lease_ms int, message_id varchar, message_hash varchar, events jsonb, files jsonb, status_message jsonb,
      error_message text, artifacts jsonb, input_tokens int, output_tokens int, cap int)
  ), locked AS (
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
  ), t AS (
    INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, metadata, last_seq,
                           last_input_seq, owner_instance, lease_expires_at, message_id, message_hash, status_message, error_message,
                           artifacts, input_tokens, output_tokens, history_bytes, artifacts_bytes, extra_bytes)
    SELECT task_id, tenant_id, agent_id, context_id, state, COALESCE(status_at, date_trunc('milliseconds', now())),
           history, metadata, n, last_input, owner,
           CASE WHEN owner IS NULL THEN NULL ELSE now() + make_interval(secs => lease_ms / 1000.0) END, message_id, message_hash,
           status_message, COALESCE(error_message, ''), COALESCE(artifacts, '[]'::jsonb), COALESCE(input_tokens, 0),
           COALESCE(output_tokens, 0), octet_length(history::text), COALESCE(octet_length(artifacts::text), 2),
           octet_length(metadata::text) + COALESCE(octet_length(status_message::text), 0)
      FROM ok ORDER BY i
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
  SELECT now() AS at, count(*)::int AS n,
    (SELECT COALESCE(array_agg(x.i), '{}') FROM x WHERE x.i NOT IN (SELECT i FROM ok)) AS refused
  FROM t`,
};

/**
 * The engine's writes that add events — task creation and appends — by
 * group commit: the writes of concurrent runs in the same tick go to
 * PostgreSQL as one statement, and each caller gets its part once it is
 * committed. Writes of one task never share a batch and commit in order.
 *
 * A task's run starts while its creation waits for its statement (see
 * `TaskService.create`): appends made in that time are merged into the
 * creation — one INSERT writes the row as the run left it, with every event —
 * and each is answered when that statement commits, as if it had been its
 * own. A run that finishes at once (an in-process model) therefore costs one
 * statement and no UPDATE. Appends made once the statement was sent wait for
 * it to commit and follow it.
 */
@Injectable()
export class TaskWrites {
  private readonly appends: GroupCommit<AppendItem, Appended | null>;
  private readonly creates: GroupCommit<CreateItem, StoredTaskEvent[] | DomainError>;
  /** Creations not committed yet, by task id. */
  private readonly pending = new Map<string, PendingCreate>();
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
    const options = {
      maxBatch: MAX_BATCH,
      maxInFlight: IN_FLIGHT,
      onBatch,
      maxBatchWeight: MAX_BATCH_FILE_BYTES,
      // A batch whose outcome is unknown (a timeout, a lost connection) is not retried: it may have committed.
      splittable: isStatementRefused,
    };
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
    const creating = this.pending.get(taskId);
    // Files are weighed when the creation is batched: an append that carries some follows it instead of joining it.
    if (creating && !creating.item.sent && !change.files?.length) {
      return new Promise((resolve) => creating.item.tail.push({ events, change, resolve }));
    }
    if (creating) {
      // The creation is on its way: follow it once it has committed (a task it failed to create takes nothing).
      return creating.committed.then(
        () => this.appends.submit({ taskId, events, change }),
        () => null,
      );
    }
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
    const item: CreateItem = { task, first, state, lease, files, tail: [], sent: false };
    // A creation the running-task cap refused comes back as its error: the statement wrote the others.
    const done = this.creates.submit(item).then((r) => {
      if (r instanceof DomainError) throw r;
      return r;
    });
    const committed = done.finally(() => this.pending.delete(task.taskId));
    // Merged appends are answered by `createMany`; if the creation fails, they wrote nothing.
    committed.catch(() => {
      for (const m of item.tail.splice(0)) m.resolve(null);
    });
    this.pending.set(task.taskId, { item, committed });
    return done;
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
      const events = item.events.map((e, k) => stored(e, item.taskId, first + k + 1, createdAt));
      out[r.i] = item.change.state ? { events: events, row } : { events: events };
      if (item.change.state && isSettled(item.change.state)) {
        this.metrics.tasksEnded.inc({ state: item.change.state, agent: this.metrics.agent(row.agentId) });
      }
    }
    return out;
  }

  private async createMany(items: CreateItem[]): Promise<(StoredTaskEvent[] | DomainError)[]> {
    const folded = items.map((item) => {
      item.sent = true;
      return fold(item);
    });
    const input = items.map(({ task, first, lease }, i) => {
      const f = folded[i];
      return {
        i,
        task_id: task.taskId,
        tenant_id: task.tenantId,
        agent_id: task.agentId,
        context_id: task.contextId,
        state: f.state,
        status_at: statusTimestamp(f.events),
        history: f.history,
        metadata: task.metadata,
        n: f.events.length,
        last_input: first.map((e) => e.kind).lastIndexOf('message') + 1,
        owner: f.lease?.owner ?? null,
        lease_ms: f.lease?.ms ?? lease.ms,
        message_id: task.messageId,
        message_hash: task.messageHash,
        events: f.events,
        files: f.files.length ? f.files.map(fileRow) : null,
        status_message: f.statusMessage,
        error_message: f.errorMessage,
        artifacts: f.artifacts,
        input_tokens: f.tokens?.input ?? null,
        output_tokens: f.tokens?.output ?? null,
        cap: task.runningCap ?? 0,
      };
    });
    const [r] = await this.sql.query<{ at: Date; n: number; refused: number[] }>(CREATE, [JSON.stringify(input)]);
    const refused = new Set(r?.refused ?? []);
    if (!r || r.n + refused.size !== items.length) throw new Error(`created ${r?.n ?? 0} of ${items.length} tasks`);
    const createdAt = r.at.toISOString();
    return items.map((item, i) => {
      if (refused.has(i)) return runningCapReached(item.task.runningCap ?? 0);
      const f = folded[i];
      const events = f.events.map((e, k) => stored(e, item.task.taskId, k + 1, createdAt));
      this.answerMerged(item, f, events, r.at);
      return events.slice(0, item.first.length);
    });
  }

  /** Answers the appends merged into a committed creation, each with its own events (and the row, if it moved the state). */
  private answerMerged(item: CreateItem, f: Folded, all: StoredTaskEvent[], at: Date): void {
    const tail = item.tail.splice(0);
    tail.forEach((m, k) => {
      const part = f.parts[k];
      if (!part) return m.resolve(null);
      const events = all.slice(part.from, part.from + m.events.length);
      if (!part.row) return m.resolve({ events });
      const upto = part.row;
      if (isSettled(upto.state)) {
        this.metrics.tasksEnded.inc({ state: upto.state, agent: this.metrics.agent(item.task.agentId) });
      }
      // The row as the statement left it after this part: what the APPEND's RETURNING would have said.
      m.resolve({
        events,
        row: {
          taskId: item.task.taskId,
          tenantId: item.task.tenantId,
          agentId: item.task.agentId,
          contextId: item.task.contextId,
          state: upto.state,
          createdAt: at,
          updatedAt: new Date(statusTimestamp(all.slice(0, part.from + m.events.length)) ?? at),
          statusMessage: upto.statusMessage,
          errorMessage: upto.errorMessage ?? '',
          history: upto.history,
          artifacts: upto.artifacts ?? [],
          metadata: item.task.metadata,
          inputTokens: upto.tokens?.input ?? 0,
          outputTokens: upto.tokens?.output ?? 0,
          lastSeq: part.from + m.events.length,
        },
      });
    });
  }
}
