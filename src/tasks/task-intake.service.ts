import { isoTime } from '../common/iso-time.js';
import { extend } from '../common/extend.js';
import { Latch } from '../common/latch.js';
import { uuid7 } from '../common/ids.js';
import { Injectable } from '@nestjs/common';
import type { MessageJson } from '../common/a2a-json.js';
import type { SubjectToken } from '../common/subject-token.js';
import { Budgets } from '../budgets/budget.service.js';
import { AppConfig } from '../config/app-config.js';
import { UsageMeter } from '../usage/usage-meter.js';
import type { ChatMessage } from '../orchestrator/providers/provider.js';
import type { RunContext } from '../orchestrator/run-event.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import { EventLog, type Watch } from './event-log/event-log.service.js';
import { messageHash } from './message-hash.js';
import type { NewPushConfig } from './repositories/task-log.types.js';
import { TaskLogWriter } from './repositories/task-log.writer.js';
import { TaskReads } from './repositories/task-reads.repository.js';
import { LeaseService } from './runs/lease.service.js';
import { messageText, runInputOf } from './runs/run-event-mapper.js';
import { RunAbandoned, type HeldRun } from './runs/run-registry.js';
import { TaskRunner } from './runs/task-runner.service.js';
import { runningCapReached, TaskError } from './task.errors.js';
import type { TaskEventBody } from './task-events.js';
import { storeFiles } from './task-files.js';
import type { TaskSnapshot } from './task-snapshot.js';
import { isInterrupted, isTerminal } from './task-state.js';
import { TaskViews } from './task-views.service.js';

export interface SendInput {
  tenantId: string;
  agent: ResolvedAgent;
  /** The validated user message (role user); ids are filled in here. */
  message: MessageJson;
  /** Stored on a new task (and shown in its `metadata`). */
  metadata?: Record<string, unknown>;
  /** The caller's JWT, for the run's outbound calls on their behalf (see `RunContext.subject`). */
  subject?: SubjectToken;
}

/** What `TaskIntake.create` answers. */
export interface Created {
  taskId: string;
  snapshot: TaskSnapshot;
  /** The messageId had created a task already: `snapshot` is that task, `sameMessage` whether this message is the one that did. */
  duplicate?: { sameMessage: boolean };
  run?: HeldRun;
  watch?: Watch;
}

/** How a new task is created (see `TaskIntake.create`). */
export interface CreateOptions {
  /** Told when the run is in the run registry (see `QuotaService.admitRun`). */
  held?: () => void;
  /** Subscribe to the new task's events before its run starts, for a stream (see `EventLog.watch`). */
  watch?: boolean;
  /** The tenant's running-task cap (0 or absent: none), held exactly by the creation's statement. */
  runningCap?: number;
  /** The push notification config the message carries, for the new task's id: stored by the creation's statement. */
  push?: (taskId: string) => NewPushConfig;
}

/** How a message is added to a task (see `TaskIntake.continue`). */
export interface ContinueOptions {
  /** The tenant's running-task cap (0 or absent: none): an interrupted task resumes only under it. */
  runningCap?: number;
  /** The push notification config the message carries: stored by the statement that adds the message. */
  push?: (taskId: string) => NewPushConfig;
}

/** How much of a context's past a new turn replays to the model. */
const CONTEXT_TASKS = 20;
const CONTEXT_CHARS = 64 * 1024;

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
 * A user message coming in: a new task with its run, or a message added to
 * a task that is not terminal (resuming it when it was interrupted). Both
 * admit a run only under the tenant's running-task cap, held exactly by
 * the statement that writes the message (see `TaskLogWriter`).
 */
@Injectable()
export class TaskIntake {
  constructor(
    private readonly writer: TaskLogWriter,
    private readonly tasks: TaskReads,
    private readonly views: TaskViews,
    private readonly log: EventLog,
    private readonly runner: TaskRunner,
    private readonly leases: LeaseService,
    private readonly config: AppConfig,
    private readonly budgets: Budgets,
    private readonly meter: UsageMeter,
  ) {}

  /**
   * Creates a task for a new message and starts its run. A resent messageId gets the task it created.
   *
   * The run starts while the creation waits for its statement (group commit): an in-process model's
   * whole turn is then written by that one statement (see `TaskLogWriter`). Nothing of the run is seen
   * before the creation has committed — every write of it follows or joins the creation, and a run
   * does nothing that leaves the process (a model or tool call) until the task is durable
   * (`RunContext.durable`). If the creation fails, the run is abandoned and has written nothing.
   */
  async create(input: SendInput, opts: CreateOptions = {}): Promise<Created> {
    // A tenant or agent whose budget is spent starts no run (no work at all without budgets).
    const spent = this.budgets.guard(input.tenantId, input.agent.id, 'start');
    if (spent) await spent;
    const taskId = uuid7();
    const contextId = input.message.contextId || uuid7();
    const { message: withRefs, files } = storeFiles(input.message, this.config.maxTextFileBytes);
    const message: MessageJson = extend(withRefs, { taskId, contextId });
    // A message in an existing context continues that conversation: the model sees its earlier turns.
    const history = input.message.contextId
      ? await this.contextHistory(input.tenantId, input.agent.id, contextId, taskId).catch(() => [])
      : [];
    const at = isoTime();
    // submitted → working is written with the task itself: one statement instead of two.
    const taken: TaskEventBody = { kind: 'message', payload: { message } };
    const first: TaskEventBody[] = [
      { kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: at } },
      taken,
      { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: at } },
    ];
    const task = {
      taskId,
      messageId: message.messageId,
      messageHash: messageHash(input.message),
      runningCap: opts.runningCap ?? 0,
      countRequest: this.budgets.countsRequests(input.tenantId, input.agent.id),
      tenantId: input.tenantId,
      agentId: input.agent.id,
      contextId,
      metadata: input.metadata ?? {},
      ...(opts.push ? { push: opts.push(taskId) } : {}),
    };
    const creating = this.writer.create(task, first, 'TASK_STATE_WORKING', this.leases.lease(), files);
    // The run's `durable`: settled once the task is stored, or once its run is abandoned for a creation that failed.
    const durable = new Latch();
    const watch = opts.watch ? this.log.watch(taskId) : undefined;
    const ctx: RunContext = { tenantId: input.tenantId, agent: input.agent, taskId, contextId, history, durable };
    if (input.subject) ctx.subject = input.subject;
    const run = this.runner.start({
      ctx,
      first: runInputOf(message, first.indexOf(taken) + 1), // the message's seq among the first events
      cursor: first.length,
      artifacts: [],
      tokens: { input: 0, output: 0 },
    });
    opts.held?.();
    try {
      await creating;
      durable.open();
    } catch (err) {
      watch?.close();
      run.abort.abort(new RunAbandoned());
      durable.open();
      // The same messageId again (a client retry, or the same request on two replicas at once): the
      // unique index decides, and the resend gets the task the first one created instead of a second run.
      if (!isDuplicateMessage(err)) throw err;
      const existing = await this.tasks.findByMessage(input.tenantId, input.agent.id, message.messageId);
      if (!existing) throw err;
      // A task stored before messages were hashed has no hash to compare: it is taken to be the same message.
      const sameMessage = existing.messageHash === null || existing.messageHash === task.messageHash;
      const snapshot = await this.views.snapshotOf(existing.row);
      return { taskId: existing.row.taskId, snapshot, duplicate: { sameMessage } };
    }
    // Counted by its statement (a request budget applies): its thresholds are checked now, off the request path.
    if (task.countRequest) this.meter.requested(input.tenantId);
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
    const created: Created = { taskId, snapshot, run };
    if (watch) created.watch = watch;
    return created;
  }

  /**
   * Adds a message to a task that is not terminal. A running task's run
   * takes it wherever it runs (the message is in the log; its replica hears
   * of it); an interrupted task gets a new run here. Returns the message's seq.
   */
  async continue(
    input: SendInput & { taskId: string },
    opts: ContinueOptions = {},
  ): Promise<{ taskId: string; seq: number }> {
    const row = await this.views.findRow(input.tenantId, input.taskId, input.agent.id);
    if (isTerminal(row.state)) throw TaskError.terminal(row.taskId, row.state);
    if (input.message.contextId && input.message.contextId !== row.contextId) {
      throw TaskError.invalidParams('message.contextId', 'does not match the context of the task');
    }
    const spent = this.budgets.guard(input.tenantId, input.agent.id, 'start');
    if (spent) await spent;
    const { message: withRefs, files } = storeFiles(input.message, this.config.maxTextFileBytes);
    const message: MessageJson = extend(withRefs, { taskId: row.taskId, contextId: row.contextId });
    const working: TaskEventBody = { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: isoTime() } };
    const cap = opts.runningCap ?? 0;
    const counted = this.budgets.countsRequests(input.tenantId, input.agent.id);
    const r = await this.writer.continueWith(
      input.tenantId,
      row.taskId,
      message,
      working,
      this.leases.lease(),
      files,
      cap,
      counted,
      opts.push?.(row.taskId) ?? null,
    );
    if (!r) {
      const state = (await this.tasks.stateOf(input.tenantId, row.taskId))?.state ?? 'a terminal state';
      if (cap > 0 && isInterrupted(state)) throw runningCapReached(cap);
      throw TaskError.terminal(row.taskId, state);
    }
    this.log.publish(row.taskId, r.events);
    if (counted) this.meter.requested(input.tenantId);
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
          metadata: row.metadata,
          history: r.row.history.map(asChat),
          ...(input.subject ? { subject: input.subject } : {}),
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
}
