import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Params } from '../../database/sql-params.js';
import { Sql, type Statement } from '../../database/sql.service.js';
import { InstanceIdentity, NOTICE_CONNECTION_PREFIX } from '../../database/instance-identity.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import type { TaskStateName } from '../task-state.js';
import {
  EVENT_COLUMNS,
  fileRow,
  INTERRUPTED_SQL,
  leaseExpiry,
  TASK_EVENTS_CHANNEL,
  RUNNING_SQL,
  TERMINAL_SQL,
  toStoredEvents,
  type EventRow,
  type Lease,
} from './sql.js';

/** Runs one statement and returns its rows. */
export type StatementRunner = <R extends Record<string, unknown>>(text: string, values: unknown[]) => Promise<R[]>;

export interface NewTask {
  taskId: string;
  messageId: string;
  /** `messageHash` of the message that creates it. */
  messageHash: string;
  /** The tenant's running-task cap (0: none): the creation is refused when its run would pass it. */
  runningCap?: number;
  tenantId: string;
  agentId: string;
  contextId: string;
  metadata: Record<string, unknown>;
}

/** A task row as the engine reads it. */
export interface TaskRow {
  taskId: string;
  tenantId: string;
  agentId: string;
  contextId: string;
  state: TaskStateName;
  createdAt: Date;
  /** The status timestamp: when the state (or status message) last changed. */
  updatedAt: Date;
  statusMessage: MessageJson | null;
  errorMessage: string;
  history: MessageJson[];
  artifacts: ArtifactJson[];
  metadata: Record<string, unknown>;
  inputTokens: number;
  outputTokens: number;
  lastSeq: number;
}

/** A task's row as a continuation found it (in the same statement that wrote the message). */
export interface ResumedRow {
  history: MessageJson[];
  artifacts: ArtifactJson[];
  inputTokens: number;
  outputTokens: number;
}

export interface TaskListQuery {
  tenantId: string;
  agentId?: string;
  contextId?: string;
  state?: TaskStateName;
  updatedAfter?: Date;
  limit: number;
  before?: TaskListCursor;
}

/** Where a page of tasks ends: the keyset of its last task. */
export interface TaskListCursor {
  updatedAt: string;
  taskId: string;
}

/** What of each task a list shows: the last `historyLength` messages (all when unset), artifacts or not. */
export interface TaskListView {
  historyLength?: number;
  includeArtifacts: boolean;
}

/** A page of task rows: `more` when tasks follow, and `last` (the keyset to continue after) then. */
export interface TaskRowPage {
  rows: TaskRow[];
  more: boolean;
  last?: TaskListCursor;
}

/** The row's columns as a `TaskRow` (no mapping step: PostgreSQL names them), history and artifacts as given. */
const columns = (history: string, artifacts: string): string =>
  `task_id AS "taskId", tenant_id AS "tenantId", agent_id AS "agentId", context_id AS "contextId", state,
  created_at AS "createdAt", updated_at AS "updatedAt", status_message AS "statusMessage", error_message AS "errorMessage",
  ${history} AS history, ${artifacts} AS artifacts, metadata, input_tokens AS "inputTokens",
  output_tokens AS "outputTokens", last_seq AS "lastSeq"`;
const COLUMNS = columns('history', 'artifacts');

/** A task by id, within its tenant (the hot reads: GetTask, streams, cancels). */
const FIND: Statement = {
  name: 'arbiter_task_find',
  text: `SELECT ${COLUMNS} FROM a2a_tasks WHERE task_id = $1 AND tenant_id = $2`,
};
const FIND_BY_MESSAGE: Statement = {
  name: 'arbiter_task_by_message',
  text: `SELECT ${COLUMNS}, message_hash AS "messageHash" FROM a2a_tasks
          WHERE tenant_id = $1 AND agent_id = $2 AND message_id = $3`,
};
const STATE_OF: Statement = {
  name: 'arbiter_task_state',
  text: `SELECT state, error_message FROM a2a_tasks WHERE task_id = $1 AND tenant_id = $2`,
};

/**
 * Task rows: creation, continuation, reads, leases and retention. Every
 * read of tenant data filters by `tenant_id`; every write that adds events
 * is one statement (row and events together, or nothing).
 */
@Injectable()
export class TaskRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly identity: InstanceIdentity,
    private readonly sql: Sql,
  ) {}

  /**
   * Adds a user message to a task that is not terminal, in one statement.
   * A running task keeps its run (wherever it is; the run takes the message
   * from the log). An interrupted task moves to `working` and is leased to
   * `lease.owner`, who must start its run: `started` says so, and `row` is
   * what that run starts from (history before this message, artifacts,
   * tokens), read under the row lock. Null when the task is terminal or
   * gone, or interrupted while its tenant is at `runningCap`: nothing was written.
   */
  async continueWith(
    tenantId: string,
    taskId: string,
    message: MessageJson,
    working: TaskEventBody,
    lease: Lease,
    files: NewTaskFile[] = [],
    runningCap = 0,
  ): Promise<{ events: StoredTaskEvent[]; started: boolean; row: ResumedRow } | null> {
    const at = working.kind === 'status' ? working.payload.timestamp : null;
    const resumes = `state IN ${INTERRUPTED_SQL}`;
    const rows = await this.ds.query<EventRow[]>(
      // An interrupted task resumes only under the tenant's running-task cap (its count locked: see CREATE).
      `WITH locked AS (SELECT running FROM tenant_running WHERE tenant_id = $2 AND $11::int > 0 FOR UPDATE),
       t AS (
         UPDATE a2a_tasks SET
           last_seq = last_seq + CASE WHEN ${resumes} THEN 2 ELSE 1 END,
           last_input_seq = last_seq + 1,
           state = CASE WHEN ${resumes} THEN 'TASK_STATE_WORKING' ELSE state END,
           updated_at = CASE WHEN ${resumes} THEN $4::timestamptz ELSE updated_at END,
           status_message = CASE WHEN ${resumes} THEN NULL ELSE status_message END,
           history = history || $3::jsonb,
           history_bytes = history_bytes + octet_length($3::jsonb::text),
           owner_instance = CASE WHEN ${resumes} THEN $6::varchar ELSE owner_instance END,
           lease_expires_at = CASE WHEN ${resumes} THEN ${leaseExpiry('$7')} ELSE lease_expires_at END
         WHERE task_id = $1 AND tenant_id = $2 AND state NOT IN ${TERMINAL_SQL}
           AND NOT (${resumes} AND $11::int > 0 AND COALESCE((SELECT running FROM locked), 0) >= $11::int)
         RETURNING last_seq, last_input_seq, history, artifacts, input_tokens, output_tokens
       ), n AS (SELECT pg_notify('${TASK_EVENTS_CHANNEL}', $8::text || '|' || $1 || '|' || t.last_seq) AS sent FROM t),
       f AS (
         INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
         SELECT ff.id, $2::uuid, $1, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
           FROM t, jsonb_to_recordset($10::jsonb) AS ff(id uuid, media_type varchar, filename varchar, size int, b64 text)
       )
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT $1, t.last_input_seq, 'message', jsonb_build_object('message', $9::jsonb) FROM t, n
       UNION ALL
       SELECT $1, t.last_seq, 'status', $5::jsonb FROM t, n WHERE t.last_seq > t.last_input_seq
       RETURNING ${EVENT_COLUMNS},
         (SELECT jsonb_build_object('history', t.history, 'artifacts', t.artifacts,
                                    'inputTokens', t.input_tokens, 'outputTokens', t.output_tokens) FROM t) AS row`,
      [
        taskId,
        tenantId,
        JSON.stringify([message]),
        at,
        JSON.stringify(working.payload),
        lease.owner,
        lease.ms,
        this.identity.id,
        JSON.stringify(message),
        JSON.stringify(files.map(fileRow)),
        runningCap,
      ],
    );
    if (rows.length === 0) return null;
    const row = (rows[0] as EventRow & { row: ResumedRow }).row;
    // The history as it was before this message: what the model replays for a new turn.
    return {
      events: toStoredEvents(rows),
      started: rows.length === 2,
      row: { ...row, history: row.history.slice(0, -1) },
    };
  }

  async find(tenantId: string, taskId: string): Promise<TaskRow | null> {
    if (taskId.length > 64) return null;
    const rows = await this.sql.query<TaskRow>(FIND, [taskId, tenantId]);
    return rows[0] ?? null;
  }

  /** The task a messageId created, if it was already sent to this tenant's agent, with that message's hash. */
  async findByMessage(
    tenantId: string,
    agentId: string,
    messageId: string,
  ): Promise<(TaskRow & { messageHash: string | null }) | null> {
    const rows = await this.sql.query<TaskRow & { messageHash: string | null }>(FIND_BY_MESSAGE, [
      tenantId,
      agentId,
      messageId,
    ]);
    return rows[0] ?? null;
  }

  /** The tenant a task belongs to (for the operator's routes, which act across tenants). */
  async tenantOf(taskId: string): Promise<string | null> {
    if (taskId.length > 64) return null;
    const rows = await this.ds.query<{ tenant_id: string }[]>(`SELECT tenant_id FROM a2a_tasks WHERE task_id = $1`, [
      taskId,
    ]);
    return rows[0]?.tenant_id ?? null;
  }

  async stateOf(tenantId: string, taskId: string): Promise<{ state: TaskStateName; errorMessage: string } | null> {
    if (taskId.length > 64) return null;
    const rows = await this.sql.query<{ state: TaskStateName; error_message: string }>(STATE_OF, [taskId, tenantId]);
    const row = rows[0];
    return row ? { state: row.state, errorMessage: row.error_message } : null;
  }

  /**
   * A page of tasks, newest status first (keyset on `updated_at, task_id`):
   * at most `limit`, and after the first at most `budget` bytes of the
   * content the view shows. The page is chosen from the stored sizes of each
   * task's content before any of it is read; only its tasks are then read,
   * their history cut to the view in the database.
   */
  async page(q: TaskListQuery, view: TaskListView, budget: number): Promise<TaskRowPage> {
    const p = new Params();
    let where = this.filter(q, p);
    if (q.before) {
      where += ` AND (updated_at, task_id) < (${p.add(q.before.updatedAt)}::timestamptz, ${p.add(q.before.taskId)})`;
    }
    const history = view.historyLength === 0 ? '0' : 'history_bytes';
    const artifacts = view.includeArtifacts ? 'artifacts_bytes' : '0';
    const candidates = await this.ds.query<{ task_id: string; updated_at: Date; bytes: string }[]>(
      `SELECT task_id, updated_at, ${history} + ${artifacts} + extra_bytes AS bytes FROM a2a_tasks
        WHERE ${where} ORDER BY updated_at DESC, task_id DESC LIMIT ${p.add(q.limit + 1)}`,
      p.values,
    );
    let used = 0;
    let n = 0;
    for (; n < Math.min(candidates.length, q.limit); n++) {
      used += Number(candidates[n].bytes);
      if (used > budget && n > 0) break;
    }
    const chosen = candidates.slice(0, n);
    if (chosen.length === 0) return { rows: [], more: false };
    const rows = await this.rowsWithView(
      q.tenantId,
      chosen.map((c) => c.task_id),
      view,
    );
    const byId = new Map(rows.map((r) => [r.taskId, r]));
    const last = chosen[chosen.length - 1];
    return {
      // In the order chosen (a task that moved meanwhile keeps its place; one deleted meanwhile is left out).
      rows: chosen.flatMap((c) => byId.get(c.task_id) ?? []),
      more: candidates.length > n,
      last: { updatedAt: last.updated_at.toISOString(), taskId: last.task_id },
    };
  }

  /** Tasks of a tenant by id, their history cut to the view's last messages and artifacts left out unless shown. */
  private async rowsWithView(tenantId: string, taskIds: string[], view: TaskListView): Promise<TaskRow[]> {
    const p = new Params();
    const tenant = p.add(tenantId);
    const ids = p.add(taskIds);
    let history = 'history';
    if (view.historyLength === 0) history = `'[]'::jsonb`;
    else if (view.historyLength !== undefined) {
      const keep = p.add(view.historyLength);
      history = `(SELECT COALESCE(jsonb_agg(h.m ORDER BY h.i), '[]'::jsonb)
          FROM jsonb_array_elements(history) WITH ORDINALITY AS h(m, i)
         WHERE h.i > jsonb_array_length(history) - ${keep}::int)`;
    }
    const artifacts = view.includeArtifacts ? 'artifacts' : `'[]'::jsonb`;
    return this.ds.query<TaskRow[]>(
      `SELECT ${columns(history, artifacts)} FROM a2a_tasks WHERE tenant_id = ${tenant} AND task_id = ANY(${ids}::varchar[])`,
      p.values,
    );
  }

  async count(q: Omit<TaskListQuery, 'limit' | 'before'>): Promise<number> {
    const p = new Params();
    const rows = await this.ds.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM a2a_tasks WHERE ${this.filter(q, p)}`,
      p.values,
    );
    return rows[0]?.n ?? 0;
  }

  /** The latest `limit` tasks of a context with one agent, oldest first (a conversation's turns). */
  async contextTasks(tenantId: string, agentId: string, contextId: string, limit: number): Promise<TaskRow[]> {
    const rows = await this.ds.query<TaskRow[]>(
      `SELECT ${COLUMNS} FROM a2a_tasks WHERE tenant_id = $1 AND agent_id = $2 AND context_id = $3
        ORDER BY created_at DESC, task_id DESC LIMIT $4`,
      [tenantId, agentId, contextId, limit],
    );
    return rows.reverse();
  }

  /** Deletes a context's terminal tasks (with their events); returns how many. */
  async deleteContext(tenantId: string, agentId: string, contextId: string): Promise<number> {
    const rows = await this.ds.query<{ n: number }[]>(
      `WITH gone AS (DELETE FROM a2a_tasks WHERE tenant_id = $1 AND agent_id = $2 AND context_id = $3
                       AND state IN ${TERMINAL_SQL} RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [tenantId, agentId, contextId],
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * Extends the leases of the runs `owner` holds; returns the tasks renewed
   * (the others ended elsewhere, or are being written). `run` executes the
   * statement (the replica's own connection, see `LeaseService`); the pool
   * when absent.
   */
  async renewLeases(
    owner: string,
    taskIds: string[],
    ms: number,
    run: StatementRunner = (text, values) => this.ds.query(text, values),
  ): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await run<{ task_id: string }>(
      // SKIP LOCKED: a row being written right now is renewed next time, and the renewal never waits on a
      // group commit's locks (so the two cannot deadlock); the run gets a re-read of its log meanwhile.
      `UPDATE a2a_tasks SET lease_expires_at = ${leaseExpiry('$3')}
        WHERE task_id IN (
          SELECT task_id FROM a2a_tasks
           WHERE owner_instance = $1 AND task_id = ANY($2::varchar[]) AND lease_expires_at IS NOT NULL
             AND state NOT IN ${TERMINAL_SQL}
           FOR UPDATE SKIP LOCKED)
        RETURNING task_id`,
      [owner, taskIds, ms],
    );
    return rows.map((r) => r.task_id);
  }

  /**
   * The owners of running tasks whose lease has run out, other than `self`
   * (whose own are judged by the runs it holds), and the replicas whose
   * notice connections are open now — one statement, so both are seen at
   * the same moment.
   */
  async expiredOwners(self: string): Promise<{ expired: string[]; live: Set<string> }> {
    const [row] = await this.ds.query<{ expired: string[] | null; live: string[] | null }[]>(
      `SELECT
         (SELECT array_agg(DISTINCT owner_instance) FROM a2a_tasks
           WHERE state IN ${RUNNING_SQL} AND lease_expires_at < now() AND owner_instance <> $1) AS expired,
         (SELECT array_agg(substr(application_name, ${NOTICE_CONNECTION_PREFIX.length + 1})) FROM pg_stat_activity
           WHERE datname = current_database() AND starts_with(application_name, $2)) AS live`,
      [self, NOTICE_CONNECTION_PREFIX],
    );
    return { expired: row?.expired ?? [], live: new Set(row?.live ?? []) };
  }

  /** Answers when the database does. */
  async ping(): Promise<void> {
    await this.ds.query('SELECT 1');
  }

  /** Deletes up to `batch` tasks that ended more than `days` ago, with their events; returns how many. */
  async purgeEnded(days: number, batch: number): Promise<number> {
    const [row] = await this.ds.query<{ n: number }[]>(
      `WITH gone AS (
         DELETE FROM a2a_tasks WHERE task_id IN (
           SELECT task_id FROM a2a_tasks
            WHERE state IN ${TERMINAL_SQL} AND updated_at < now() - make_interval(days => $1::int)
            ORDER BY updated_at LIMIT $2)
         RETURNING task_id)
       SELECT count(*)::int AS n FROM gone`,
      [days, batch],
    );
    return row?.n ?? 0;
  }

  /** The tenant's tasks matching the list filters (the same for a page and for its total). */
  private filter(q: Omit<TaskListQuery, 'limit' | 'before'>, p: Params): string {
    const where = [`tenant_id = ${p.add(q.tenantId)}`];
    if (q.agentId) where.push(`agent_id = ${p.add(q.agentId)}`);
    if (q.contextId) where.push(`context_id = ${p.add(q.contextId)}`);
    if (q.state) where.push(`state = ${p.add(q.state)}`);
    if (q.updatedAfter) where.push(`updated_at >= ${p.add(q.updatedAfter.toISOString())}::timestamptz`);
    return where.join(' AND ');
  }
}
