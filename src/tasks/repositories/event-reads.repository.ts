import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Sql, type Statement } from '../../database/sql.service.js';
import { EVENT_COLUMNS, toStoredEvents, type EventRow } from '../statements/fragments.sql.js';
import type { StoredTaskEvent } from '../task-events.js';
import type { Queryable } from './task-log.types.js';

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

/** Reads of the event log (gap-free `seq` per task), each within the task's tenant; writes go through `TaskLogWriter`. */
@Injectable()
export class EventReads {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly sql: Sql,
  ) {}

  /** A task's events after `afterSeq` (up to `uptoSeq`), oldest first. */
  async events(tenantId: string, taskId: string, afterSeq: number, uptoSeq?: number): Promise<StoredTaskEvent[]> {
    if (taskId.length > 64) return [];
    return toStoredEvents(await this.sql.query<EventRow>(EVENTS, [taskId, afterSeq, uptoSeq ?? null, tenantId]));
  }

  /** The first `limit` events of a task after `afterSeq`, oldest first (a push delivery's batch). */
  async eventsBatch(tenantId: string, taskId: string, afterSeq: number, limit: number): Promise<StoredTaskEvent[]> {
    if (taskId.length > 64) return [];
    const rows = await this.ds.query<EventRow[]>(
      `SELECT ${EVENT_COLUMNS} FROM task_events
        WHERE task_id = $1 AND seq > $2
          AND EXISTS (SELECT 1 FROM a2a_tasks a WHERE a.task_id = $1 AND a.tenant_id = $4)
        ORDER BY seq LIMIT $3`,
      [taskId, afterSeq, limit, tenantId],
    );
    return toStoredEvents(rows);
  }

  /** What a run must act on after `afterSeq`: user messages for it, and status changes (an end written elsewhere). */
  async controlEvents(tenantId: string, taskId: string, afterSeq: number): Promise<StoredTaskEvent[]> {
    if (taskId.length > 64) return [];
    return toStoredEvents(await this.sql.query<EventRow>(CONTROL_EVENTS, [taskId, afterSeq, tenantId]));
  }

  /** Artifact events of each task up to its seq, for folding artifacts; by task id. `q`: a transaction's, to read under its locks. */
  async artifactEvents(
    tasks: { taskId: string; uptoSeq: number }[],
    q: Queryable = this.ds,
  ): Promise<Map<string, StoredTaskEvent[]>> {
    const out = new Map<string, StoredTaskEvent[]>(tasks.map((t) => [t.taskId, []]));
    if (tasks.length === 0) return out;
    const rows = await q.query<EventRow[]>(
      `SELECT e.task_id, e.seq, e.kind, e.payload, e.created_at FROM task_events e
         JOIN unnest($1::varchar[], $2::int[]) AS x(task_id, upto) ON x.task_id = e.task_id
        WHERE e.task_id = ANY($1::varchar[]) AND e.kind = 'artifact' AND e.seq <= x.upto
        ORDER BY e.task_id, e.seq`,
      [tasks.map((t) => t.taskId), tasks.map((t) => t.uptoSeq)],
    );
    for (const e of toStoredEvents(rows)) out.get(e.taskId)?.push(e);
    return out;
  }
}
