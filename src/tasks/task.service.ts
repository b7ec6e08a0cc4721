import { Inject, Injectable } from '@nestjs/common';
import { ORCHESTRATOR, UPSTREAM_TASK_ID, type Orchestrator } from '../orchestrator/run-event.js';
import { abortable } from '../common/abortable.js';
import { EventLog } from './event-log/event-log.service.js';
import { TaskLogWriter } from './repositories/task-log.writer.js';
import type { TaskListCursor, TaskListQuery, TaskListView } from './repositories/task-reads.repository.js';
import { RunEnd } from './runs/run-end.js';
import { RunRegistry, type HeldRun } from './runs/run-registry.js';
import { TaskError } from './task.errors.js';
import {
  TaskIntake,
  type ContinueOptions,
  type Created,
  type CreateOptions,
  type SendInput,
} from './task-intake.service.js';
import { toSnapshot, type TaskSnapshot } from './task-snapshot.js';
import { isInterrupted, isSettled, isTerminal } from './task-state.js';
import { TaskViews } from './task-views.service.js';

// What the engine's callers may hold of its internals: a run started for them, and how a model reads a message.
export type { HeldRun } from './runs/run-registry.js';
export { messageText } from './runs/run-event-mapper.js';
export type { SendInput } from './task-intake.service.js';

/** How long a cancel waits for a run held here to stop before answering. */
const CANCEL_WAIT_MS = 5_000;

/**
 * The task engine's front door: create and run, continue, cancel, read,
 * list, and wait for a task to settle. Every method takes the tenant first;
 * another tenant's task answers exactly like a missing one. Any replica can
 * serve any of them: runs, ends and continuations meet in the log. Messages
 * come in through `TaskIntake`, reads through `TaskViews`; ends from outside
 * a run go through `RunEnd`, the one terminal writer.
 */
@Injectable()
export class TaskService {
  constructor(
    private readonly intake: TaskIntake,
    private readonly views: TaskViews,
    private readonly writer: TaskLogWriter,
    private readonly log: EventLog,
    private readonly registry: RunRegistry,
    private readonly ends: RunEnd,
    @Inject(ORCHESTRATOR) private readonly orchestrator: Orchestrator,
  ) {}

  /** Creates a task for a new message and starts its run (see `TaskIntake.create`). */
  create(input: SendInput, opts: CreateOptions = {}): Promise<Created> {
    return this.intake.create(input, opts);
  }

  /** Adds a message to a task that is not terminal; returns the message's seq (see `TaskIntake.continue`). */
  continue(
    input: SendInput & { taskId: string },
    opts: ContinueOptions = {},
  ): Promise<{ taskId: string; seq: number }> {
    return this.intake.continue(input, opts);
  }

  /** Cancels a task that is not terminal: it ends `canceled` exactly once, and its run stops wherever it is. */
  async cancel(
    tenantId: string,
    taskId: string,
    opts: { agentId?: string; reason?: string } = {},
  ): Promise<TaskSnapshot> {
    const row = await this.views.findRow(tenantId, taskId, opts.agentId);
    if (isTerminal(row.state)) throw TaskError.notCancelable(row.taskId, row.state);
    await this.ends.endTasks(
      { kind: 'task', tenantId, taskId: row.taskId },
      { state: 'TASK_STATE_CANCELED', error: opts.reason ?? 'canceled by client' },
    );
    const held = this.registry.get(row.taskId);
    // A remote-backed agent's task that waits for input has no run to forward the cancel: it is forwarded here.
    if (isInterrupted(row.state) && typeof row.metadata[UPSTREAM_TASK_ID] === 'string') {
      await this.orchestrator.cancelUpstream?.(tenantId, row.agentId, row.metadata);
    }
    if (held) await Promise.race([held.finished, new Promise((r) => setTimeout(r, CANCEL_WAIT_MS).unref())]);
    const after = await this.views.findRow(tenantId, taskId, opts.agentId);
    // It finished on its own first.
    if (after.state !== 'TASK_STATE_CANCELED') throw TaskError.notCancelable(after.taskId, after.state);
    return toSnapshot(after);
  }

  /** Cancels every unfinished task of a tenant (the tenant was disabled); returns how many. */
  async cancelAll(tenantId: string, reason: string): Promise<number> {
    const ended = await this.ends.endTasks(
      { kind: 'tenant', tenantId },
      { state: 'TASK_STATE_CANCELED', error: reason },
    );
    return ended.length;
  }

  /** The tenant of a task, for the operator's routes (which act across tenants). */
  tenantOf(taskId: string): Promise<string | null> {
    return this.views.tenantOf(taskId);
  }

  get(tenantId: string, taskId: string, agentId?: string): Promise<TaskSnapshot> {
    return this.views.get(tenantId, taskId, agentId);
  }

  /** A page of the tenant's tasks, and their total (see `TaskViews.list`). */
  list(
    q: TaskListQuery,
    view: TaskListView = { includeArtifacts: true },
  ): Promise<{ tasks: TaskSnapshot[]; total: number; more: boolean; last?: TaskListCursor }> {
    return this.views.list(q, view);
  }

  /**
   * Waits until the task is terminal, or interrupted by a status written
   * after `afterSeq` (a continuation passes its message's seq, so an earlier
   * input-required does not count), then returns it. `signal` gives up; it
   * is read only if there is something to wait for.
   */
  async settled(
    tenantId: string,
    taskId: string,
    afterSeq = 0,
    signalOf?: () => AbortSignal,
    run?: HeldRun,
  ): Promise<TaskSnapshot> {
    if (run) {
      // A run started here for this message: its settling write says how the task stands, no read needed.
      const task = run.settledTask !== undefined ? run.settledTask : await abortable(run.settled, signalOf?.());
      if (task) return task;
    }
    const signal = signalOf?.();
    const row = await this.views.findRow(tenantId, taskId);
    if (isTerminal(row.state) || (afterSeq === 0 && isSettled(row.state))) return this.views.snapshotOf(row);
    for await (const e of this.log.tail(tenantId, taskId, afterSeq, signal)) {
      if (e.kind === 'status' && isSettled(e.payload.state)) break;
    }
    signal?.throwIfAborted();
    return this.get(tenantId, taskId);
  }

  /** The latest `limit` tasks of a context with one agent, oldest first (its turns). */
  contextTasks(tenantId: string, agentId: string, contextId: string, limit: number): Promise<TaskSnapshot[]> {
    return this.views.contextTasks(tenantId, agentId, contextId, limit);
  }

  /** Deletes a context's ended tasks with their events (unfinished ones stay: cancel them first). */
  deleteEndedInContext(tenantId: string, agentId: string, contextId: string): Promise<number> {
    return this.writer.deleteEndedInContext(tenantId, agentId, contextId);
  }
}
