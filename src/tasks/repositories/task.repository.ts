import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { InstanceIdentity } from '../services/instance-identity.js';
import type { DataSource } from 'typeorm';
import { TaskEntity } from '../entities/task.entity.js';
import type { ArtifactJson, MessageJson, StoredTaskEvent, TaskEventBody } from '../task-events.js';
import { allowedFrom, NON_TERMINAL_STATES, type TaskStateName } from '../task-state.js';

/** The PostgreSQL channel of change notices: `<instance>|<task id>|<last seq>`, sent on commit. */
export const TASK_EVENTS_CHANNEL = 'arbiter_task_events';

export interface NewTask {
  taskId: string;
  messageId: string;
  tenantId: string;
  agentId: string;
  contextId: string;
  metadata: Record<string, unknown>;
}

/** Row changes that go with an append, applied in the same statement. */
/** Who runs a task: its owner (a process instance id) and how long the claim holds without renewal. */
export interface Lease {
  owner: string;
  ms: number;
}

export interface TaskRowChange {
  /** Claim the task for a run (a lease), or release the claim (null). */
  lease?: Lease | null;
  state?: TaskStateName;
  statusMessage?: MessageJson | null;
  errorMessage?: string;
  historyAppend?: MessageJson[];
  artifacts?: ArtifactJson[];
  tokens?: { input: number; output: number };
}

export interface TaskListQuery {
  tenantId: string;
  agentId?: string;
  contextId?: string;
  state?: TaskStateName;
  updatedAfter?: Date;
  limit: number;
  before?: { updatedAt: string; taskId: string };
}

interface EventRow {
  task_id: string;
  seq: number;
  kind: string;
  payload: unknown;
  created_at: Date;
}

/** The timestamp of the last status event in a batch, if any. */
function statusTimestamp(events: TaskEventBody[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.kind === 'status') return e.payload.timestamp;
  }
  return null;
}

export function toStoredEvent(r: EventRow): StoredTaskEvent {
  return {
    taskId: r.task_id,
    seq: r.seq,
    kind: r.kind,
    payload: r.payload,
    createdAt: r.created_at.toISOString(),
  } as StoredTaskEvent;
}

/**
 * Tasks and their event log. Every write is one statement: the task row is
 * updated (its `last_seq` advanced, its state moved along the state machine)
 * and the events inserted with the next gap-free seqs, or nothing happens.
 */
@Injectable()
export class TaskRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly identity: InstanceIdentity,
  ) {}

  /**
   * Inserts the task and its first events in one statement (one round trip,
   * atomic): the row in `state` with `last_seq` = the number of events.
   */
  async create(
    task: NewTask,
    first: TaskEventBody[],
    historyFirst: MessageJson[],
    state: TaskStateName = 'TASK_STATE_SUBMITTED',
    lease?: Lease,
  ): Promise<StoredTaskEvent[]> {
    const rows = await this.ds.query<EventRow[]>(
      `WITH t AS (
         INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, metadata, last_seq,
                                owner_instance, lease_expires_at, message_id)
         VALUES ($1, $2, $3, $4, $5, COALESCE($10::timestamptz, date_trunc('milliseconds', now())), $6::jsonb, $7::jsonb, $8::int,
                 $11::varchar, CASE WHEN $11::varchar IS NULL THEN NULL ELSE now() + make_interval(secs => $12::int / 1000.0) END,
                 $13::varchar)
         RETURNING task_id
       )
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT t.task_id, e.ord::int, e.value->>'kind', e.value->'payload'
         FROM t, jsonb_array_elements($9::jsonb) WITH ORDINALITY AS e(value, ord)
       RETURNING task_id, seq, kind, payload, created_at`,
      [
        task.taskId,
        task.tenantId,
        task.agentId,
        task.contextId,
        state,
        JSON.stringify(historyFirst),
        JSON.stringify(task.metadata),
        first.length,
        JSON.stringify(first),
        statusTimestamp(first),
        lease?.owner ?? null,
        lease?.ms ?? 0,
        task.messageId,
      ],
    );
    return rows.map(toStoredEvent).sort((a, b) => a.seq - b.seq);
  }

  /** The task a message created, if that message was already sent to this tenant's agent. */
  findByMessage(tenantId: string, agentId: string, messageId: string): Promise<TaskEntity | null> {
    return this.ds.manager.findOneBy(TaskEntity, { tenantId, agentId, messageId });
  }

  /**
   * Appends events and applies `change` atomically. Returns null when the
   * task is not in a state that allows it (terminal, or a transition the
   * state machine forbids) — then nothing was written.
   */
  async append(taskId: string, events: TaskEventBody[], change: TaskRowChange = {}): Promise<StoredTaskEvent[] | null> {
    if (events.length === 0) return [];
    const from = change.state ? allowedFrom(change.state) : NON_TERMINAL_STATES;
    const rows = await this.ds.query<EventRow[]>(
      `WITH t AS (
         UPDATE a2a_tasks SET
           last_seq = last_seq + $3::int,
           state = COALESCE($4::varchar, state),
           updated_at = CASE WHEN $4::text IS NOT NULL THEN COALESCE($13::timestamptz, date_trunc('milliseconds', clock_timestamp())) ELSE updated_at END,
           status_message = CASE WHEN $5::boolean THEN $6::jsonb ELSE status_message END,
           error_message = COALESCE($7::text, error_message),
           history = history || $8::jsonb,
           artifacts = COALESCE($9::jsonb, artifacts),
           input_tokens = COALESCE($10::int, input_tokens),
           output_tokens = COALESCE($11::int, output_tokens),
           owner_instance = CASE WHEN $14::boolean THEN $15::varchar ELSE owner_instance END,
           lease_expires_at = CASE WHEN $14::boolean
             THEN (CASE WHEN $15::varchar IS NULL THEN NULL ELSE now() + make_interval(secs => $16::int / 1000.0) END)
             ELSE lease_expires_at END
         WHERE task_id = $1 AND state = ANY($12::text[])
         RETURNING last_seq
       )
       , n AS (SELECT pg_notify('${TASK_EVENTS_CHANNEL}', $17::text || '|' || $1 || '|' || t.last_seq) AS sent FROM t)
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT $1, t.last_seq - $3::int + e.ord::int, e.value->>'kind', e.value->'payload'
         FROM t, n, jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(value, ord)
       RETURNING task_id, seq, kind, payload, created_at`,
      [
        taskId,
        JSON.stringify(events),
        events.length,
        change.state ?? null,
        change.statusMessage !== undefined,
        change.statusMessage ? JSON.stringify(change.statusMessage) : null,
        change.errorMessage ?? null,
        JSON.stringify(change.historyAppend ?? []),
        change.artifacts ? JSON.stringify(change.artifacts) : null,
        change.tokens?.input ?? null,
        change.tokens?.output ?? null,
        from,
        // The status timestamp clients see in the event is the one stored on the row.
        statusTimestamp(events),
        change.lease !== undefined,
        change.lease?.owner ?? null,
        change.lease?.ms ?? 0,
        // The notice (sent on commit) tells other replicas' subscribers to read the log up to this seq.
        this.identity.id,
      ],
    );
    if (rows.length === 0) return null;
    return rows.map(toStoredEvent).sort((a, b) => a.seq - b.seq);
  }

  /** A task's state and error text (no tenant check: for the task machinery only). */
  async stateOf(taskId: string): Promise<{ state: string; errorMessage: string } | null> {
    const rows = await this.ds.query<{ state: string; error_message: string }[]>(
      `SELECT state, error_message FROM a2a_tasks WHERE task_id = $1`,
      [taskId],
    );
    const row = rows[0];
    return row ? { state: row.state, errorMessage: row.error_message } : null;
  }

  /** Extends the leases of the runs this instance holds. */
  async renewLeases(owner: string, taskIds: string[], ms: number): Promise<void> {
    if (taskIds.length === 0) return;
    await this.ds.query(
      `UPDATE a2a_tasks SET lease_expires_at = now() + make_interval(secs => $3::int / 1000.0)
        WHERE owner_instance = $1 AND task_id = ANY($2::varchar[]) AND lease_expires_at IS NOT NULL`,
      [owner, taskIds, ms],
    );
  }

  /**
   * Running tasks whose owner stopped renewing (it died), or — with `owner`
   * set — every running task of a previous process of this one.
   */
  async orphaned(limit: number, notOwnedBy?: string): Promise<string[]> {
    const rows = await this.ds.query<{ task_id: string }[]>(
      `SELECT task_id FROM a2a_tasks
        WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')
          AND ($2::varchar IS NOT NULL AND owner_instance IS DISTINCT FROM $2::varchar
               OR lease_expires_at < now())
        ORDER BY lease_expires_at NULLS FIRST LIMIT $1`,
      [limit, notOwnedBy ?? null],
    );
    return rows.map((r) => r.task_id);
  }

  /**
   * Deletes up to `batch` tasks that ended more than `days` ago, with their
   * events (cascade). Returns how many went; callers repeat while it is `batch`.
   */
  async purgeEnded(days: number, batch: number): Promise<number> {
    const [row] = await this.ds.query<{ n: number }[]>(
      `WITH gone AS (
         DELETE FROM a2a_tasks WHERE task_id IN (
           SELECT task_id FROM a2a_tasks
            WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')
              AND updated_at < now() - make_interval(days => $1::int)
            ORDER BY updated_at LIMIT $2)
         RETURNING task_id)
       SELECT count(*)::int AS n FROM gone`,
      [days, batch],
    );
    return row?.n ?? 0;
  }

  findForTenant(tenantId: string, taskId: string): Promise<TaskEntity | null> {
    return this.ds.manager.findOneBy(TaskEntity, { tenantId, taskId });
  }

  async events(taskId: string, afterSeq: number, uptoSeq?: number): Promise<StoredTaskEvent[]> {
    const rows = await this.ds.query<EventRow[]>(
      `SELECT task_id, seq, kind, payload, created_at FROM task_events
        WHERE task_id = $1 AND seq > $2 AND ($3::int IS NULL OR seq <= $3)
        ORDER BY seq`,
      [taskId, afterSeq, uptoSeq ?? null],
    );
    return rows.map(toStoredEvent);
  }

  /** Artifact events up to `uptoSeq`, for folding a running task's artifacts. */
  async artifactEvents(taskId: string, uptoSeq: number): Promise<StoredTaskEvent[]> {
    const rows = await this.ds.query<EventRow[]>(
      `SELECT task_id, seq, kind, payload, created_at FROM task_events
        WHERE task_id = $1 AND kind = 'artifact' AND seq <= $2 ORDER BY seq`,
      [taskId, uptoSeq],
    );
    return rows.map(toStoredEvent);
  }

  /**
   * The latest `limit` tasks of a context with one agent, oldest first: a
   * conversation's turns (context ids are per tenant and agent here).
   */
  async contextTasks(tenantId: string, agentId: string, contextId: string, limit: number): Promise<TaskEntity[]> {
    const rows = await this.ds.getRepository(TaskEntity).find({
      where: { tenantId, agentId, contextId },
      order: { createdAt: 'DESC', taskId: 'DESC' },
      take: limit,
    });
    return rows.reverse();
  }

  /** Deletes a context's tasks (with their events) that are terminal; returns how many. */
  async deleteContext(tenantId: string, agentId: string, contextId: string): Promise<number> {
    const res = await this.ds
      .getRepository(TaskEntity)
      .createQueryBuilder()
      .delete()
      .where('tenant_id = :tenantId AND agent_id = :agentId AND context_id = :contextId', {
        tenantId,
        agentId,
        contextId,
      })
      .andWhere(`state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`)
      .execute();
    return res.affected ?? 0;
  }

  /** Newest status first; keyset on (updated_at, task_id). */
  list(q: TaskListQuery): Promise<TaskEntity[]> {
    const qb = this.filtered(q);
    if (q.before) {
      qb.andWhere('(t.updated_at, t.task_id) < (:bu::timestamptz, :bt)', {
        bu: q.before.updatedAt,
        bt: q.before.taskId,
      });
    }
    return qb.orderBy('t.updated_at', 'DESC').addOrderBy('t.task_id', 'DESC').limit(q.limit).getMany();
  }

  count(q: Omit<TaskListQuery, 'limit' | 'before'>): Promise<number> {
    return this.filtered(q).getCount();
  }

  /** The tenant's tasks matching the list filters (the same for a page and for its total). */
  private filtered(q: Omit<TaskListQuery, 'limit' | 'before'>) {
    const qb = this.ds
      .getRepository(TaskEntity)
      .createQueryBuilder('t')
      .where('t.tenant_id = :tenantId', { tenantId: q.tenantId });
    if (q.agentId) qb.andWhere('t.agent_id = :agentId', { agentId: q.agentId });
    if (q.contextId) qb.andWhere('t.context_id = :contextId', { contextId: q.contextId });
    if (q.state) qb.andWhere('t.state = :state', { state: q.state });
    if (q.updatedAfter) qb.andWhere('t.updated_at >= :after', { after: q.updatedAfter });
    return qb;
  }
}
