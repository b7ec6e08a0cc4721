import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Params } from '../../database/sql-params.js';
import { GroupCommit } from '../../database/group-commit.js';
import { Sql, type Statement } from '../../database/sql.service.js';
import type { TaskRow } from '../task-snapshot.js';
import type { TaskStateName } from '../task-state.js';

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
/**
 * Tasks by id and tenant, many at once: row `n` answers the nth pair (a pair
 * with no task, or whose task is another tenant's, has no row). A lateral
 * lookup per pair, so each is a primary-key probe whatever the plan.
 */
export const FIND_MANY: Statement = {
  name: 'arbiter_task_find_many',
  text: `SELECT f.*, k.n::int AS "n" FROM unnest($1::varchar[], $2::uuid[]) WITH ORDINALITY AS k(id, tenant, n)
    CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM a2a_tasks WHERE task_id = k.id AND tenant_id = k.tenant) f`,
};
const FIND_BY_MESSAGE: Statement = {
  name: 'arbiter_task_by_message',
  text: `SELECT ${COLUMNS}, message_hash AS "messageHash" FROM a2a_tasks
          WHERE tenant_id = $1 AND agent_id = $2 AND message_id = $3`,
};
const STATE_OF: Statement = {
  name: 'arbiter_task_state',
  text: `SELECT state, error_message, last_seq FROM a2a_tasks WHERE task_id = $1 AND tenant_id = $2`,
};

/**
 * Reads of task rows: by id, by message, a task's state, list pages and
 * their totals, a context's turns. Every read of tenant data filters by
 * `tenant_id`; writes go through `TaskLogWriter`.
 */
@Injectable()
export class TaskReads {
  /**
   * Lookups by id in the same tick go as one query (`FIND_MANY`); one alone as `FIND`. Four batches in
   * flight (the writes' group commits hold four of the pool's connections at most), so a batch carrying a
   * large task holds up only the lookups that share it.
   */
  private readonly lookups = new GroupCommit<{ tenantId: string; taskId: string }, TaskRow | null>(
    (keys) => this.findMany(keys),
    { maxBatch: 32, maxInFlight: 4 },
  );

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly sql: Sql,
  ) {}

  async find(tenantId: string, taskId: string): Promise<TaskRow | null> {
    if (taskId.length > 64) return null;
    return this.lookups.submit({ tenantId, taskId });
  }

  private async findMany(keys: { tenantId: string; taskId: string }[]): Promise<(TaskRow | null)[]> {
    if (keys.length === 1) {
      const rows = await this.sql.query<TaskRow>(FIND, [keys[0].taskId, keys[0].tenantId]);
      return [rows[0] ?? null];
    }
    const rows = await this.sql.query<TaskRow & { n?: number }>(FIND_MANY, [
      keys.map((k) => k.taskId),
      keys.map((k) => k.tenantId),
    ]);
    const found: (TaskRow | null)[] = keys.map(() => null);
    for (const row of rows) {
      const n = row.n as number;
      delete row.n; // the last column: the row keeps a task row's shape
      found[n - 1] = row;
    }
    return found;
  }

  /** The task a messageId created, if it was already sent to this tenant's agent, with that message's hash. */
  async findByMessage(
    tenantId: string,
    agentId: string,
    messageId: string,
  ): Promise<{ row: TaskRow; messageHash: string | null } | null> {
    const rows = await this.sql.query<TaskRow & { messageHash: string | null }>(FIND_BY_MESSAGE, [
      tenantId,
      agentId,
      messageId,
    ]);
    if (!rows[0]) return null;
    const { messageHash, ...row } = rows[0];
    return { row, messageHash };
  }

  /** The tenant a task belongs to (for the operator's routes, which act across tenants). */
  async tenantOf(taskId: string): Promise<string | null> {
    if (taskId.length > 64) return null;
    const rows = await this.ds.query<{ tenant_id: string }[]>(`SELECT tenant_id FROM a2a_tasks WHERE task_id = $1`, [
      taskId,
    ]);
    return rows[0]?.tenant_id ?? null;
  }

  async stateOf(
    tenantId: string,
    taskId: string,
  ): Promise<{ state: TaskStateName; errorMessage: string; lastSeq: number } | null> {
    if (taskId.length > 64) return null;
    const rows = await this.sql.query<{ state: TaskStateName; error_message: string; last_seq: number }>(STATE_OF, [
      taskId,
      tenantId,
    ]);
    const row = rows[0];
    return row ? { state: row.state, errorMessage: row.error_message, lastSeq: Number(row.last_seq) } : null;
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

  /** Tasks of a tenant by id, their history cut to the view's last messages and artifacts left out unless shown. */
  private async rowsWithView(tenantId: string, taskIds: string[], view: TaskListView): Promise<TaskRow[]> {
    const p = new Params();
    const tenant = p.add(tenantId);
    const ids = p.add(taskIds);
    let history = 'history';
    if (view.historyLength === 0) history = `'[]'::jsonb`;
    else if (view.historyLength !== undefined) {
      const keep = p.add(view.historyLength);
      // to_jsonb(array_agg(…)), not jsonb_agg: see the creation statement (create.sql.ts).
      history = `(SELECT COALESCE(to_jsonb(array_agg(h.m ORDER BY h.i)), '[]'::jsonb)
          FROM jsonb_array_elements(history) WITH ORDINALITY AS h(m, i)
         WHERE h.i > jsonb_array_length(history) - ${keep}::int)`;
    }
    const artifacts = view.includeArtifacts ? 'artifacts' : `'[]'::jsonb`;
    return this.ds.query<TaskRow[]>(
      `SELECT ${columns(history, artifacts)} FROM a2a_tasks WHERE tenant_id = ${tenant} AND task_id = ANY(${ids}::varchar[])`,
      p.values,
    );
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
