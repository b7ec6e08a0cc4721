import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { EventReads } from './repositories/event-reads.repository.js';
import {
  TaskReads,
  type TaskListCursor,
  type TaskListQuery,
  type TaskListView,
} from './repositories/task-reads.repository.js';
import { TaskError } from './task.errors.js';
import { foldArtifacts } from './task-events.js';
import { toSnapshot, type TaskRow, type TaskSnapshot } from './task-snapshot.js';
import { isTerminal } from './task-state.js';

/**
 * Tasks as the surfaces read them: one by id, a page of a list, a
 * context's turns. A running task's artifacts are folded from its log (they
 * live there until it stops). Another tenant's task reads as missing.
 */
@Injectable()
export class TaskViews {
  constructor(
    private readonly tasks: TaskReads,
    private readonly events: EventReads,
    private readonly config: AppConfig,
  ) {}

  async get(tenantId: string, taskId: string, agentId?: string): Promise<TaskSnapshot> {
    return this.snapshotOf(await this.findRow(tenantId, taskId, agentId));
  }

  /**
   * A page of the tenant's tasks (see `TaskReads.page`): at most `q.limit`,
   * and after the first at most `ARBITER_LIST_PAGE_BYTES` of what the view
   * shows; `last` is where the next page starts when `more`.
   */
  async list(
    q: TaskListQuery,
    view: TaskListView = { includeArtifacts: true },
  ): Promise<{ tasks: TaskSnapshot[]; total: number; more: boolean; last?: TaskListCursor }> {
    const { limit: _l, before: _b, ...filter } = q;
    const [page, total] = await Promise.all([
      this.tasks.page(q, view, this.config.listPageBytes),
      this.tasks.count(filter),
    ]);
    // A running task's artifacts are folded from its log, which only a view with artifacts needs.
    const tasks = view.includeArtifacts
      ? await Promise.all(page.rows.map((r) => this.snapshotOf(r)))
      : page.rows.map((r) => toSnapshot(r));
    return { tasks, total, more: page.more, last: page.last };
  }

  /** The latest `limit` tasks of a context with one agent, oldest first (its turns). */
  contextTasks(tenantId: string, agentId: string, contextId: string, limit: number): Promise<TaskSnapshot[]> {
    return this.tasks.contextTasks(tenantId, agentId, contextId, limit).then((rows) => rows.map((r) => toSnapshot(r)));
  }

  /** The tenant of a task, for the operator's routes (which act across tenants). */
  tenantOf(taskId: string): Promise<string | null> {
    return this.tasks.tenantOf(taskId);
  }

  /** The task's row, or `task_not_found` (also for another tenant's task, or another agent's when `agentId` is given). */
  async findRow(tenantId: string, taskId: string, agentId?: string): Promise<TaskRow> {
    const row = await this.tasks.find(tenantId, taskId);
    if (!row || (agentId !== undefined && row.agentId !== agentId)) throw TaskError.notFound(taskId);
    return row;
  }

  async snapshotOf(row: TaskRow): Promise<TaskSnapshot> {
    if (isTerminal(row.state)) return toSnapshot(row);
    // A running task's artifacts live in the log until it stops.
    const events = await this.events.artifactEvents([{ taskId: row.taskId, uptoSeq: row.lastSeq }]);
    return toSnapshot(row, foldArtifacts(row.artifacts, events.get(row.taskId) ?? []));
  }
}
