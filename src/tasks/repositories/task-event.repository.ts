import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Sql, type Statement } from '../../database/sql.service.js';
import type { DataSource } from 'typeorm';
import { Params } from '../../database/sql-params.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import { NON_TERMINAL_STATES, type TaskStateName } from '../task-state.js';
import { EVENT_COLUMNS, TASK_EVENTS_CHANNEL, toStoredEvents, type EventRow, type Lease } from './sql.js';

/** Row changes that go with an append, applied in the same statement. */
export interface TaskRowChange {
  /** Claim the task for a run (a lease), or release the claim (null). */
  lease?: Lease | null;
  state?: TaskStateName;
  statusMessage?: MessageJson | null;
  errorMessage?: string;
  historyAppend?: MessageJson[];
  artifacts?: ArtifactJson[];
  tokens?: { input: number; output: number };
  /** Write only if the task has no user message after this seq (a run settling after taking its input). */
  inputsUpTo?: number;
  /** Files the events refer to (a tool wrote them), stored in the same statement. */
  files?: NewTaskFile[];
}

/**
 * Which tasks an end from outside their runs applies to: one task, every
 * unfinished task of a tenant, or running tasks whose owner stopped renewing
 * its lease (`restarted`: every running task not owned by `owner`, for the
 * embedded database's single process at start). `held` are runs alive here.
 */
export type EndScope =
  | { kind: 'task'; tenantId: string; taskId: string }
  | { kind: 'tenant'; tenantId: string }
  /**
   * Running tasks whose lease ran out and whose owner is `gone` (judged by
   * `LeaseService`), or is `owner` (this replica) without holding them; or,
   * `restarted`, every running task not leased to `owner` (the embedded
   * database at start).
   */
  | { kind: 'orphans'; owner: string; held: string[]; gone: string[]; restarted?: boolean };

/** Anything that runs SQL: the DataSource, or a transaction's EntityManager. */
export interface Queryable {
  query<T = unknown>(sql: string, params?: unknown[]): Promise<T>;
}

/** A task an end applies to, as locked before writing it. */
export interface EndCandidate {
  taskId: string;
  tenantId: string;
  lastSeq: number;
  artifacts: ArtifactJson[];
}

const RUNNING: TaskStateName[] = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'];

/** The SQL condition of a scope on the task row aliased `a` (the state condition included). */
function scopeSql(scope: EndScope, p: Params): string {
  switch (scope.kind) {
    case 'task':
      return `a.task_id = ${p.add(scope.taskId)} AND a.tenant_id = ${p.add(scope.tenantId)} AND a.state = ANY(${p.add(NON_TERMINAL_STATES)}::text[])`;
    case 'tenant':
      return `a.tenant_id = ${p.add(scope.tenantId)} AND a.state = ANY(${p.add(NON_TERMINAL_STATES)}::text[])`;
    case 'orphans': {
      const owner = p.add(scope.owner);
      const lost = scope.restarted
        ? `(a.owner_instance IS DISTINCT FROM ${owner} OR a.lease_expires_at < now())`
        : `(a.lease_expires_at < now() AND (a.owner_instance IS NULL
             OR a.owner_instance = ANY(${p.add(scope.gone)}::varchar[])
             OR (a.owner_instance = ${owner} AND NOT a.task_id = ANY(${p.add(scope.held)}::varchar[]))))`;
      return `a.state = ANY(${p.add(RUNNING)}::text[]) AND ${lost}`;
    }
    default: {
      const unreachable: never = scope;
      return unreachable;
    }
  }
}

/** A task's events after a seq (up to another), within its tenant: every stream's backlog and gap reads. */
const EVENTS: Statement = {
  name: 'arbiter_task_events',
  text: `SELECT ${EVENT_COLUMNS} FROM task_events
    WHERE task_id = $1 AND seq > $2 AND ($3::int IS NULL OR seq <= $3)
      AND EXISTS (SELECT 1 FROM a2a_tasks a WHERE a.task_id = $1 AND a.tenant_id = $4)
    ORDER BY seq`,
};
/** What a run must act on: user messages and status changes. */
const CONTROL_EVENTS: Statement = {
  name: 'arbiter_task_control_events',
  text: `SELECT ${EVENT_COLUMNS} FROM task_events
    WHERE task_id = $1 AND seq > $2 AND kind IN ('message', 'status')
      AND EXISTS (SELECT 1 FROM a2a_tasks a WHERE a.task_id = $1 AND a.tenant_id = $3)
    ORDER BY seq`,
};

/**
 * The event log: gap-free `seq` per task. Every write is one statement that
 * advances the task row's `last_seq` (moving its state along the state
 * machine) and inserts the events, or writes nothing; a NOTIFY on commit
 * tells the other replicas.
 */
@Injectable()
export class TaskEventRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly identity: InstanceIdentity,
    private readonly sql: Sql,
  ) {}

  /** A task's events after `afterSeq` (up to `uptoSeq`), oldest first. */
  async events(tenantId: string, taskId: string, afterSeq: number, uptoSeq?: number): Promise<StoredTaskEvent[]> {
    if (taskId.length > 64) return [];
    return toStoredEvents(await this.sql.query<EventRow>(EVENTS, [taskId, afterSeq, uptoSeq ?? null, tenantId]));
  }

  /** What a run must act on after `afterSeq`: user messages for it, and status changes (an end written elsewhere). */
  async controlEvents(tenantId: string, taskId: string, afterSeq: number): Promise<StoredTaskEvent[]> {
    if (taskId.length > 64) return [];
    return toStoredEvents(await this.sql.query<EventRow>(CONTROL_EVENTS, [taskId, afterSeq, tenantId]));
  }

  /** Runs `work` in one transaction (row locks taken in it hold until it ends). */
  transaction<T>(work: (q: Queryable) => Promise<T>): Promise<T> {
    return this.ds.transaction((em) => work(em));
  }

  /** Artifact events of each task up to its seq, for folding artifacts; by task id. */
  async artifactEvents(
    tasks: { taskId: string; uptoSeq: number }[],
    q: Queryable = this.ds,
  ): Promise<Map<string, StoredTaskEvent[]>> {
    const out = new Map<string, StoredTaskEvent[]>(tasks.map((t) => [t.taskId, []]));
    if (tasks.length === 0) return out;
    const rows = await q.query<EventRow[]>(
      `SELECT e.task_id, e.seq, e.kind, e.payload, e.created_at FROM task_events e
         JOIN unnest($1::varchar[], $2::int[]) AS x(task_id, upto) ON x.task_id = e.task_id
        WHERE e.kind = 'artifact' AND e.seq <= x.upto
        ORDER BY e.task_id, e.seq`,
      [tasks.map((t) => t.taskId), tasks.map((t) => t.uptoSeq)],
    );
    for (const e of toStoredEvents(rows)) out.get(e.taskId)?.push(e);
    return out;
  }

  /**
   * Up to `limit` unfinished tasks in `scope`, locked for the rest of the
   * transaction `q`, in task id order. One task waits for its lock (a write
   * in flight); for many, rows another transaction holds are skipped, so two
   * replicas ending the same tasks never wait on each other (see `anyLeft`).
   */
  async lockCandidates(q: Queryable, scope: EndScope, limit: number): Promise<EndCandidate[]> {
    const p = new Params();
    return q.query<EndCandidate[]>(
      `SELECT a.task_id AS "taskId", a.tenant_id AS "tenantId", a.last_seq AS "lastSeq", a.artifacts
         FROM a2a_tasks a WHERE ${scopeSql(scope, p)}
        ORDER BY a.task_id LIMIT ${p.add(limit)} FOR UPDATE OF a${scope.kind === 'task' ? '' : ' SKIP LOCKED'}`,
      p.values,
    );
  }

  /** Whether any unfinished task is left in `scope` (one skipped while locked by a write, say). */
  async anyLeft(scope: EndScope): Promise<boolean> {
    const p = new Params();
    const rows = await this.ds.query<unknown[]>(
      `SELECT 1 FROM a2a_tasks a WHERE ${scopeSql(scope, p)} LIMIT 1`,
      p.values,
    );
    return rows.length > 0;
  }

  /**
   * Ends locked tasks (see `lockCandidates`) in one statement: each gets the
   * terminal `status` event, its folded artifacts, and loses its lease.
   * Returns the status events written, one per task ended.
   */
  async endMany(
    q: Queryable,
    scope: EndScope,
    tasks: { taskId: string; artifacts: ArtifactJson[] }[],
    status: Extract<TaskEventBody, { kind: 'status' }>['payload'],
  ): Promise<StoredTaskEvent[]> {
    if (tasks.length === 0) return [];
    const p = new Params();
    const input = p.add(JSON.stringify(tasks.map((t) => ({ task_id: t.taskId, artifacts: t.artifacts }))));
    const where = scopeSql(scope, p);
    const rows = await q.query<EventRow[]>(
      `WITH x AS (SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(task_id varchar, artifacts jsonb)),
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
         FROM x WHERE a.task_id = x.task_id AND ${where}
         RETURNING a.task_id, a.last_seq
       ), n AS (SELECT t.task_id, pg_notify('${TASK_EVENTS_CHANNEL}', ${p.add(this.identity.id)}::text || '|' || t.task_id || '|' || t.last_seq) AS sent FROM t)
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT t.task_id, t.last_seq, 'status', ${p.add(JSON.stringify(status))}::jsonb FROM t JOIN n ON n.task_id = t.task_id
       RETURNING ${EVENT_COLUMNS}`,
      p.values,
    );
    return toStoredEvents(rows);
  }
}
