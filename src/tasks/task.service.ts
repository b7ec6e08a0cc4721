import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { ChatMessage } from '../orchestrator/providers/provider.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import { EventLog, type Watch } from './event-log/event-log.service.js';
import { TaskEventRepository } from './repositories/task-event.repository.js';
import {
  TaskRepository,
  type TaskListCursor,
  type TaskListQuery,
  type TaskListView,
  type TaskRow,
} from './repositories/task.repository.js';
import { TaskWrites } from './repositories/task-writes.js';
import { LeaseService } from './runs/lease.service.js';
import { RunEnd } from './runs/run-end.js';
import { messageText, runInputOf } from './runs/run-event-mapper.js';
import { RunAbandoned, RunRegistry, type HeldRun } from './runs/run-registry.js';
import { TaskRunner } from './runs/task-runner.service.js';
import { TaskError } from './task.errors.js';
import { toSnapshot, type TaskSnapshot } from './task-snapshot.js';
import type { MessageJson } from '../common/a2a-json.js';
import { foldArtifacts, type TaskEventBody } from './task-events.js';
import { isInterrupted, isSettled, isTerminal } from './task-state.js';
import { abortable } from '../common/abortable.js';
import { AppConfig } from '../config/app-config.js';
import { DomainError } from '../common/errors.js';
import { storeFiles } from './task-files.js';
import { messageHash } from './message-hash.js';

export interface SendInput {
  tenantId: string;
  agent: ResolvedAgent;
  /** The validated user message (role user); ids are filled in here. */
  message: MessageJson;
  /** Stored on a new task (and shown in its `metadata`). */
  metadata?: Record<string, unknown>;
}

/** How much of a context's past a new turn replays to the model. */
const CONTEXT_TASKS = 20;
const CONTEXT_CHARS = 64 * 1024;
/** How long a cancel waits for a run held here to stop before answering. */
const CANCEL_WAIT_MS = 5_000;

const now = (): string => new Date().toISOString();
const asChat = (m: MessageJson): ChatMessage => ({
  role: m.role === 'ROLE_AGENT' ? 'assistant' : 'user',
  content: messageText(m),
});

function isDuplicateMessage(err: unknown): boolean {
  type PgError = { code?: string; constraint?: string; message?: string; driverError?: PgError };
  const driver = (err as PgError).driverError ?? (err as PgError);
  return (
    driver?.code === '23505' &&
    (driver.constraint === 'uq_a2a_tasks_message' || (driver.message ?? '').includes('uq_a2a_tasks_message'))
  );
}

/**
 * The task engine's front door: create and run, continue, cancel, read,
 * list, and wait for a task to settle. Every method takes the tenant first;
 * another tenant's task answers exactly like a missing one. Any replica can
 * serve any of them: runs, ends and continuations meet in the log.
 */
@Injectable()
export class TaskService {
  constructor(
    private readonly tasks: TaskRepository,
    private readonly events: TaskEventRepository,
    private readonly writes: TaskWrites,
    private readonly log: EventLog,
    private readonly runner: TaskRunner,
    private readonly registry: RunRegistry,
    private readonly ends: RunEnd,
    private readonly leases: LeaseService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Creates a task for a new message and starts its run. A resent messageId gets the task it created.
   *
   * The run starts while the creation waits for its statement (group commit): an in-process model's
   * whole turn is then written by that one statement (see `TaskWrites`). Nothing of the run is seen
   * before the creation has committed — every write of it follows or joins the creation, and a run
   * does nothing that leaves the process (a model or tool call) until the task is durable
   * (`RunContext.durable`). If the creation fails, the run is abandoned and has written nothing.
   */
  async create(
    input: SendInput,
    opts: {
      /** Told when the run is in the run registry (see `QuotaService.admitRun`). */
      held?: () => void;
      /** Subscribe to the new task's events before its run starts, for a stream (see `EventLog.watch`). */
      watch?: boolean;
      /** The tenant's running-task cap (0 or absent: none), held exactly by the creation's statement. */
      runningCap?: number;
    } = {},
  ): Promise<{
    taskId: string;
    snapshot: TaskSnapshot;
    /** The messageId had created a task already: `snapshot` is that task, `sameMessage` whether this message is the one that did. */
    duplicate?: { sameMessage: boolean };
    run?: HeldRun;
    watch?: Watch;
  }> {
    const taskId = randomUUID();
    const contextId = input.message.contextId || randomUUID();
    const { message: withRefs, files } = storeFiles(input.message, this.config.maxTextFileBytes);
    const message: MessageJson = { ...withRefs, taskId, contextId };
    // A message in an existing context continues that conversation: the model sees its earlier turns.
    const history = input.message.contextId
      ? await this.contextHistory(input.tenantId, input.agent.id, contextId, taskId).catch(() => [])
      : [];
    const at = now();
    // submitted → working is written with the task itself: one statement instead of two.
    const first: TaskEventBody[] = [
      { kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: at } },
      { kind: 'message', payload: { message } },
      { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: at } },
    ];
    const task = {
      taskId,
      messageId: message.messageId,
      messageHash: messageHash(input.message),
      runningCap: opts.runningCap ?? 0,
      tenantId: input.tenantId,
      agentId: input.agent.id,
      contextId,
      metadata: input.metadata ?? {},
    };
    const creating = this.writes.create(task, first, 'TASK_STATE_WORKING', this.leases.lease(), files);
    const watch = opts.watch ? this.log.watch(taskId) : undefined;
    const run = this.runner.start({
      ctx: {
        tenantId: input.tenantId,
        agent: input.agent,
        taskId,
        contextId,
        history,
        durable: creating.then(
          () => undefined,
          () => undefined,
        ),
      },
      first: runInputOf(message, first.findIndex((e) => e.kind === 'message') + 1),
      cursor: first.length,
      artifacts: [],
      tokens: { input: 0, output: 0 },
    });
    opts.held?.();
    try {
      await creating;
    } catch (err) {
      watch?.close();
      run.abort.abort(new RunAbandoned());
      // The same messageId again (a client retry, or the same request on two replicas at once): the
      // unique index decides, and the resend gets the task the first one created instead of a second run.
      if (!isDuplicateMessage(err)) throw err;
      const existing = await this.tasks.findByMessage(input.tenantId, input.agent.id, message.messageId);
      if (!existing) throw err;
      // A task stored before messages were hashed has no hash to compare: it is taken to be the same message.
      const sameMessage = existing.messageHash === null || existing.messageHash === task.messageHash;
      return { taskId: existing.taskId, snapshot: await this.snapshotOf(existing), duplicate: { sameMessage } };
    }
    // The task as its first events left it: a new stream or a non-blocking send needs no read-back.
    const snapshot: TaskSnapshot = {
      id: taskId,
      contextId,
      agentId: input.agent.id,
      state: 'TASK_STATE_WORKING',
      statusMessage: null,
      timestamp: at,
      errorMessage: '',
      history: [message],
      artifacts: [],
      metadata: task.metadata,
      inputTokens: 0,
      outputTokens: 0,
      createdAt: at,
      lastSeq: first.length,
    };
    return { taskId, snapshot, run, ...(watch ? { watch } : {}) };
  }

  /**
   * Adds a message to a task that is not terminal. A running task's run
   * takes it wherever it runs (the message is in the log; its replica hears
   * of it); an interrupted task gets a new run here. Returns the message's seq.
   */
  async continue(
    input: SendInput & { taskId: string },
    opts: {
      /** The tenant's running-task cap (0 or absent: none): an interrupted task resumes only under it. */
      runningCap?: number;
    } = {},
  ): Promise<{ taskId: string; seq: number }> {
    const row = await this.findRow(input.tenantId, input.taskId, input.agent.id);
    if (isTerminal(row.state)) throw TaskError.terminal(row.taskId, row.state);
    if (input.message.contextId && input.message.contextId !== row.contextId) {
      throw TaskError.invalidParams('message.contextId', 'does not match the context of the task');
    }
    const { message: withRefs, files } = storeFiles(input.message, this.config.maxTextFileBytes);
    const message: MessageJson = { ...withRefs, taskId: row.taskId, contextId: row.contextId };
    const working: TaskEventBody = { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: now() } };
    const cap = opts.runningCap ?? 0;
    const r = await this.tasks.continueWith(
      input.tenantId,
      row.taskId,
      message,
      working,
      this.leases.lease(),
      files,
      cap,
    );
    if (!r) {
      const state = (await this.tasks.stateOf(input.tenantId, row.taskId))?.state ?? 'a terminal state';
      if (cap > 0 && isInterrupted(state)) {
        throw DomainError.rateLimited(
          `running-task cap reached: this tenant may run ${cap} tasks at once; retry when one has finished`,
          1,
        );
      }
      throw TaskError.terminal(row.taskId, state);
    }
    this.log.publish(row.taskId, r.events);
    const seq = r.events.find((e) => e.kind === 'message')?.seq ?? 0;
    if (r.started) {
      // From the row as the continuation resumed it (not as first read: the run may have settled since).
      this.runner.start({
        // Everything before this message: the model sees the task's conversation.
        ctx: {
          tenantId: input.tenantId,
          agent: input.agent,
          taskId: row.taskId,
          contextId: row.contextId,
          history: r.row.history.map(asChat),
        },
        first: runInputOf(message, seq),
        cursor: r.events[r.events.length - 1]?.seq ?? seq,
        artifacts: r.row.artifacts,
        tokens: { input: r.row.inputTokens, output: r.row.outputTokens },
        catchUp: true,
      });
    }
    return { taskId: row.taskId, seq };
  }

  /** Cancels a task that is not terminal: it ends `canceled` exactly once, and its run stops wherever it is. */
  async cancel(
    tenantId: string,
    taskId: string,
    opts: { agentId?: string; reason?: string } = {},
  ): Promise<TaskSnapshot> {
    const row = await this.findRow(tenantId, taskId, opts.agentId);
    if (isTerminal(row.state)) throw TaskError.notCancelable(row.taskId, row.state);
    await this.ends.endTasks(
      { kind: 'task', tenantId, taskId: row.taskId },
      { state: 'TASK_STATE_CANCELED', error: opts.reason ?? 'canceled by client' },
    );
    const held = this.registry.get(row.taskId);
    if (held) await Promise.race([held.finished, new Promise((r) => setTimeout(r, CANCEL_WAIT_MS).unref())]);
    const after = await this.findRow(tenantId, taskId, opts.agentId);
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
    return this.tasks.tenantOf(taskId);
  }

  async get(tenantId: string, taskId: string, agentId?: string): Promise<TaskSnapshot> {
    return this.snapshotOf(await this.findRow(tenantId, taskId, agentId));
  }

  /**
   * A page of the tenant's tasks (see `TaskRepository.page`): at most
   * `q.limit`, and after the first at most `ARBITER_LIST_PAGE_BYTES` of what
   * the view shows; `last` is where the next page starts when `more`.
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

  /**
   * Waits until the task is terminal, or interrupted by a status written
   * after `afterSeq` (a continuation passes its message's seq, so an earlier
   * input-required does not count), then returns it. `signal` gives up.
   */
  async settled(
    tenantId: string,
    taskId: string,
    afterSeq = 0,
    signal?: AbortSignal,
    run?: HeldRun,
  ): Promise<TaskSnapshot> {
    if (run) {
      // A run started here for this message: its settling write says how the task stands, no read needed.
      const task = await abortable(run.settled, signal);
      if (task) return task;
    }
    const row = await this.findRow(tenantId, taskId);
    if (isTerminal(row.state) || (afterSeq === 0 && isSettled(row.state))) return this.snapshotOf(row);
    for await (const e of this.log.tail(tenantId, taskId, afterSeq, signal)) {
      if (e.kind === 'status' && isSettled(e.payload.state)) break;
    }
    signal?.throwIfAborted();
    return this.get(tenantId, taskId);
  }

  /** The latest `limit` tasks of a context with one agent, oldest first (its turns). */
  contextTasks(tenantId: string, agentId: string, contextId: string, limit: number): Promise<TaskSnapshot[]> {
    return this.tasks.contextTasks(tenantId, agentId, contextId, limit).then((rows) => rows.map((r) => toSnapshot(r)));
  }

  /** Deletes a context's ended tasks with their events (unfinished ones stay: cancel them first). */
  deleteEndedInContext(tenantId: string, agentId: string, contextId: string): Promise<number> {
    return this.tasks.deleteContext(tenantId, agentId, contextId);
  }

  /** What the model replays for a new turn in a context: the latest turns' messages, within a size budget. */
  private async contextHistory(
    tenantId: string,
    agentId: string,
    contextId: string,
    exceptTaskId: string,
  ): Promise<ChatMessage[]> {
    const rows = await this.tasks.contextTasks(tenantId, agentId, contextId, CONTEXT_TASKS + 1);
    const turns = rows.filter((r) => r.taskId !== exceptTaskId).flatMap((r) => r.history.map(asChat));
    const out: ChatMessage[] = [];
    let size = 0;
    for (let i = turns.length - 1; i >= 0; i--) {
      const t = turns[i];
      if (!t || !t.content) continue;
      size += t.content.length;
      if (size > CONTEXT_CHARS) break;
      out.unshift(t);
    }
    return out;
  }

  private async findRow(tenantId: string, taskId: string, agentId?: string): Promise<TaskRow> {
    const row = await this.tasks.find(tenantId, taskId);
    if (!row || (agentId !== undefined && row.agentId !== agentId)) throw TaskError.notFound(taskId);
    return row;
  }

  private async snapshotOf(row: TaskRow): Promise<TaskSnapshot> {
    if (isTerminal(row.state)) return toSnapshot(row);
    // A running task's artifacts live in the log until it stops.
    const events = await this.events.artifactEvents([{ taskId: row.taskId, uptoSeq: row.lastSeq }]);
    return toSnapshot(row, foldArtifacts(row.artifacts, events.get(row.taskId) ?? []));
  }
}
