import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { AsyncQueue, QueueOverflowError } from '../../common/async-queue.js';
import type { RunInput } from '../../orchestrator/run-event.js';
import type { ResolvedAgent } from '../../registry/services/agent-catalog.service.js';
import type { TaskEntity } from '../entities/task.entity.js';
import { TaskRepository, type TaskListQuery } from '../repositories/task.repository.js';
import { SubscriberOverflowError, TaskError } from '../task-errors.js';
import {
  foldArtifacts,
  type ArtifactJson,
  type MessageJson,
  type StoredTaskEvent,
  type TaskEventBody,
} from '../task-events.js';
import { isSettled, isTerminal, type TaskStateName } from '../task-state.js';
import { TaskEventBus } from './event-bus.service.js';
import { InFlightRegistry } from './in-flight.registry.js';
import { CancelReason, TaskRunner } from './task-runner.service.js';
import { LeaseService } from './lease.service.js';
import { nativeFrames, type NativeFrame } from '../native-events.js';

/** A task as read back: the row plus artifacts folded from the log while it runs. */
export interface TaskSnapshot {
  id: string;
  contextId: string;
  agentId: string;
  state: TaskStateName;
  statusMessage: MessageJson | null;
  timestamp: string;
  errorMessage: string;
  history: MessageJson[];
  artifacts: ArtifactJson[];
  metadata: Record<string, unknown>;
  inputTokens: number;
  outputTokens: number;
  createdAt: string;
  lastSeq: number;
}

export interface SendInput {
  tenantId: string;
  agent: ResolvedAgent;
  /** The validated user message (role user); ids are filled in here. */
  message: MessageJson;
  /** What the model sees for this message. */
  text: string;
  /** Stored on a new task (and shown in its `metadata`). */
  metadata?: Record<string, unknown>;
}

/** A conversation turn as the model and the native API see it. */
export interface ContextTurn {
  role: 'user' | 'assistant';
  content: string;
  requestId: string;
  at: string;
}

/** How much of a context's past a new turn replays to the model. */
const CONTEXT_TASKS = 20;
const CONTEXT_CHARS = 64 * 1024;

function messageText(m: MessageJson): string {
  return m.parts.map((p) => p.text ?? (p.data !== undefined ? JSON.stringify(p.data) : '')).join('\n');
}

const now = (): string => new Date().toISOString();

function isDuplicateMessage(err: unknown): boolean {
  const driver = (err as { driverError?: { code?: string; constraint?: string; message?: string } }).driverError;
  return (
    driver?.code === '23505' &&
    (driver.constraint === 'uq_a2a_tasks_message' || (driver.message ?? '').includes('uq_a2a_tasks_message'))
  );
}

/**
 * Tasks: create and run, continue, cancel, read, list and tail. Every
 * method is scoped by tenant (and agent where given); another tenant's task
 * is indistinguishable from a missing one.
 */
@Injectable()
export class TaskService {
  constructor(
    private readonly repo: TaskRepository,
    private readonly bus: TaskEventBus,
    private readonly inflight: InFlightRegistry,
    private readonly runner: TaskRunner,
    private readonly leases: LeaseService,
    private readonly config: AppConfig,
  ) {}

  /** Creates a task for a new message and starts its run. */
  async create(
    input: SendInput,
  ): Promise<{ taskId: string; events: StoredTaskEvent[]; snapshot: TaskSnapshot; duplicate?: boolean }> {
    const taskId = randomUUID();
    const contextId = input.message.contextId || randomUUID();
    const message: MessageJson = { ...input.message, taskId, contextId };
    // submitted → working is written with the task itself: one statement instead of two.
    const at = now();
    const events: TaskEventBody[] = [
      { kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: at } },
      { kind: 'message', payload: { message } },
      { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: at } },
    ];
    let stored: StoredTaskEvent[];
    try {
      stored = await this.repo.create(
        {
          taskId,
          messageId: message.messageId,
          tenantId: input.tenantId,
          agentId: input.agent.id,
          contextId,
          metadata: input.metadata ?? {},
        },
        events,
        [message],
        'TASK_STATE_WORKING',
        this.leases.lease(),
      );
    } catch (err) {
      // The same messageId again (a client retry, or the same request on two replicas at once): the
      // unique index decides, and the resend gets the task the first one created instead of a second run.
      if (!isDuplicateMessage(err)) throw err;
      const existing = await this.repo.findByMessage(input.tenantId, input.agent.id, message.messageId);
      if (!existing) throw err;
      return { taskId: existing.taskId, events: [], snapshot: await this.snapshotOf(existing), duplicate: true };
    }
    // A message in an existing context continues that conversation: the model sees its earlier turns.
    const history = input.message.contextId
      ? await this.contextHistory(input.tenantId, input.agent.id, contextId, taskId).catch(() => [])
      : [];
    this.runner.start({
      alreadyWorking: true,
      ctx: { tenantId: input.tenantId, agent: input.agent, taskId, contextId, history },
      first: { text: input.text, messageId: message.messageId },
      artifacts: [],
      tokens: { input: 0, output: 0 },
    });
    // The task as just written: a new stream or a non-blocking send needs no read-back.
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
      metadata: input.metadata ?? {},
      inputTokens: 0,
      outputTokens: 0,
      createdAt: at,
      lastSeq: stored.length,
    };
    return { taskId, events: stored, snapshot };
  }

  /**
   * Adds a message to a task that is not terminal: it goes to the running
   * turn, or starts a new turn of an interrupted task.
   */
  async continue(input: SendInput & { taskId: string }): Promise<{ taskId: string; seq: number }> {
    // Keyed by the id as given: the row is read (and checked) once, under the lock.
    return this.inflight.withLock(input.taskId, async () => {
      const row = await this.findRow(input.tenantId, input.taskId, input.agent.id);
      if (isTerminal(row.state)) throw TaskError.terminal(row.taskId, row.state);
      if (input.message.contextId && input.message.contextId !== row.contextId) {
        throw TaskError.invalidParams('message.contextId', 'does not match the context of the task');
      }
      const message: MessageJson = { ...input.message, taskId: row.taskId, contextId: row.contextId };
      const stored = await this.repo.append(row.taskId, [{ kind: 'message', payload: { message } }], {
        historyAppend: [message],
      });
      if (!stored) throw TaskError.terminal(row.taskId, 'a terminal state');
      this.bus.publish(row.taskId, stored);
      const seq = stored[stored.length - 1]?.seq ?? 0;
      const runInput: RunInput = { text: input.text, messageId: message.messageId };
      const running = this.inflight.get(row.taskId);
      if (running?.accepting && running.inbox.push(runInput)) return { taskId: row.taskId, seq };
      // No turn is taking input here (the task is interrupted): start one.
      const snapshot = await this.snapshotOf(row);
      this.runner.start({
        ctx: {
          tenantId: input.tenantId,
          agent: input.agent,
          taskId: row.taskId,
          contextId: row.contextId,
          // Everything before this message: the model sees the task's conversation.
          history: (row.history as MessageJson[]).map((m) => ({
            role: m.role === 'ROLE_AGENT' ? ('assistant' as const) : ('user' as const),
            content: messageText(m),
          })),
        },
        first: runInput,
        artifacts: snapshot.artifacts,
        tokens: { input: row.inputTokens, output: row.outputTokens },
      });
      return { taskId: row.taskId, seq };
    });
  }

  /**
   * The turns of a context with one agent, oldest first: each task's
   * messages (user messages, and the agent's replies and questions). Failed
   * or canceled turns keep their user message and have no reply.
   */
  async contextTurns(tenantId: string, agentId: string, contextId: string, limit = 100): Promise<ContextTurn[]> {
    const rows = await this.repo.contextTasks(tenantId, agentId, contextId, limit);
    return rows.flatMap((row) =>
      (row.history as MessageJson[]).map((m) => ({
        role: m.role === 'ROLE_AGENT' ? ('assistant' as const) : ('user' as const),
        content: messageText(m),
        requestId: row.taskId,
        at: row.updatedAt.toISOString(),
      })),
    );
  }

  /** What the model replays for a new turn in a context: the latest turns, within a size budget. */
  private async contextHistory(
    tenantId: string,
    agentId: string,
    contextId: string,
    exceptTaskId: string,
  ): Promise<{ role: 'user' | 'assistant'; content: string }[]> {
    const turns = (await this.contextTurns(tenantId, agentId, contextId, CONTEXT_TASKS + 1)).filter(
      (t) => t.requestId !== exceptTaskId,
    );
    const out: { role: 'user' | 'assistant'; content: string }[] = [];
    let size = 0;
    for (let i = turns.length - 1; i >= 0; i--) {
      const t = turns[i];
      if (!t || !t.content) continue;
      size += t.content.length;
      if (size > CONTEXT_CHARS) break;
      out.unshift({ role: t.role, content: t.content });
    }
    return out;
  }

  /** Removes a context's ended turns (a deleted conversation); running ones are canceled first. */
  async deleteContext(tenantId: string, agentId: string, contextId: string): Promise<void> {
    const rows = await this.repo.contextTasks(tenantId, agentId, contextId, 10_000);
    for (const row of rows) {
      if (isTerminal(row.state)) continue;
      await this.cancel(tenantId, row.taskId).catch((err: unknown) => {
        if (!(err instanceof TaskError)) throw err;
      });
    }
    await this.repo.deleteContext(tenantId, agentId, contextId);
  }

  /** Cancels a task that is not terminal; the task ends `canceled` exactly once. */
  async cancel(tenantId: string, taskId: string, agentId?: string): Promise<TaskSnapshot> {
    const row = await this.findRow(tenantId, taskId, agentId);
    if (isTerminal(row.state)) throw TaskError.notCancelable(row.taskId, row.state);
    // Under the task's lock, so a continuation cannot start a run between the check and the write.
    const running = await this.inflight.withLock(row.taskId, async () => {
      const run = this.inflight.get(row.taskId);
      if (run) {
        run.abort.abort(new CancelReason());
        return run;
      }
      const current = await this.findRow(tenantId, taskId, agentId);
      if (isTerminal(current.state)) return undefined;
      const snap = await this.snapshotOf(current);
      const stored = await this.repo.append(
        row.taskId,
        [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', error: 'canceled by client', timestamp: now() } }],
        { state: 'TASK_STATE_CANCELED', errorMessage: 'canceled by client', artifacts: snap.artifacts, lease: null },
      );
      if (stored) this.bus.publish(row.taskId, stored);
      return undefined;
    });
    if (running) await running.finished;
    const after = await this.findRow(tenantId, taskId, agentId);
    if (after.state !== 'TASK_STATE_CANCELED' && isTerminal(after.state)) {
      // It finished on its own first.
      throw TaskError.notCancelable(after.taskId, after.state);
    }
    return this.snapshotOf(after);
  }

  async get(tenantId: string, taskId: string, agentId?: string): Promise<TaskSnapshot> {
    return this.snapshotOf(await this.findRow(tenantId, taskId, agentId));
  }

  async list(q: TaskListQuery): Promise<{ tasks: TaskSnapshot[]; total: number; more: boolean }> {
    const rows = await this.repo.list({ ...q, limit: q.limit + 1 });
    const page = rows.slice(0, q.limit);
    const { limit: _l, before: _b, ...filter } = q;
    const [tasks, total] = await Promise.all([
      Promise.all(page.map((r) => this.snapshotOf(r))),
      this.repo.count(filter),
    ]);
    return { tasks, total, more: rows.length > q.limit };
  }

  /**
   * The task's events after `afterSeq`: the stored backlog, then live ones,
   * until (and including) the terminal event. Subscribes before reading the
   * backlog and drops duplicates by seq, so nothing is lost or repeated at
   * the boundary. Stops early when `signal` aborts.
   */
  async *tail(taskId: string, afterSeq: number, signal?: AbortSignal): AsyncGenerator<StoredTaskEvent> {
    // Events written here arrive as events; events written by another replica as a poke (read them from the log).
    const live = new AsyncQueue<StoredTaskEvent | { poke: number }>(this.config.sseBufferEvents);
    const unsubscribe = this.bus.subscribe(taskId, (events, poked) => {
      if (poked !== undefined) live.push({ poke: poked });
      for (const e of events) live.push(e);
    });
    const onAbort = (): void => live.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) live.close(); // gone before we listened
    let last = afterSeq;
    try {
      const backlog = await this.repo.events(taskId, afterSeq);
      for (const e of backlog) {
        last = e.seq;
        yield e;
        if (e.kind === 'status' && isTerminal(e.payload.state)) return;
      }
      // An empty backlog may mean a resume at or past the end (nothing will come); a non-empty one without the
      // terminal event means it was not written yet, and it will arrive live.
      if (backlog.length === 0) {
        const now = await this.repo.stateOf(taskId);
        if (!now || isTerminal(now.state)) {
          for (const e of await this.repo.events(taskId, last)) yield e;
          return;
        }
      }
      for await (const item of live) {
        const upto = 'poke' in item ? item.poke : item.seq - 1;
        if (upto > last) {
          // Written elsewhere, or a gap (committed before we subscribed, after the backlog read): read the log.
          const missed = await this.repo.events(taskId, last, upto >= Number.MAX_SAFE_INTEGER ? undefined : upto);
          for (const e of missed) {
            last = e.seq;
            yield e;
            if (e.kind === 'status' && isTerminal(e.payload.state)) return;
          }
        }
        if ('poke' in item || item.seq <= last) continue;
        last = item.seq;
        yield item;
        if (item.kind === 'status' && isTerminal(item.payload.state)) return;
      }
    } catch (err) {
      if (err instanceof QueueOverflowError) throw new SubscriberOverflowError(taskId, last);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      live.close();
    }
  }

  /** The task's events after `afterSeq` in the native catalogue (see native-events.ts), until the end. */
  async *nativeTail(
    tenantId: string,
    taskId: string,
    afterSeq: number,
    signal?: AbortSignal,
  ): AsyncGenerator<NativeFrame> {
    const row = await this.findRow(tenantId, taskId);
    const info = { id: row.taskId, agentId: row.agentId, contextId: row.contextId };
    for await (const e of this.tail(row.taskId, afterSeq, signal)) {
      let tokens: { input: number; output: number } | undefined;
      if (e.kind === 'status' && isTerminal(e.payload.state)) {
        const end = await this.repo.findForTenant(tenantId, row.taskId);
        if (end) tokens = { input: end.inputTokens, output: end.outputTokens };
      }
      yield* nativeFrames(e, info, tokens);
    }
  }

  /**
   * Waits until the task is terminal or interrupted by a status written
   * after `afterSeq` (a continuation passes its message's seq, so an
   * earlier input-required does not count), then returns it.
   */
  async settled(tenantId: string, taskId: string, afterSeq = 0): Promise<TaskSnapshot> {
    const local = this.inflight.get(taskId);
    if (local) {
      // The run is here: it settles when it ends (terminal, or interrupted).
      await local.finished;
      return this.get(tenantId, taskId);
    }
    const row = await this.findRow(tenantId, taskId);
    if (!isTerminal(row.state) && !(afterSeq === 0 && isSettled(row.state))) {
      for await (const e of this.tail(taskId, afterSeq)) {
        if (e.kind === 'status' && isSettled(e.payload.state)) break;
      }
    }
    return this.get(tenantId, taskId);
  }

  private async findRow(tenantId: string, taskId: string, agentId?: string): Promise<TaskEntity> {
    const row = taskId.length <= 64 ? await this.repo.findForTenant(tenantId, taskId) : null;
    if (!row || (agentId !== undefined && row.agentId !== agentId)) throw TaskError.notFound(taskId);
    return row;
  }

  async snapshotOf(row: TaskEntity): Promise<TaskSnapshot> {
    let artifacts = row.artifacts as ArtifactJson[];
    if (!isTerminal(row.state)) {
      // A running task's artifacts live in the log until it stops.
      const events = await this.repo.artifactEvents(row.taskId, row.lastSeq);
      artifacts = foldArtifacts(artifacts, events);
    }
    return {
      id: row.taskId,
      contextId: row.contextId,
      agentId: row.agentId,
      state: row.state as TaskStateName,
      statusMessage: row.statusMessage as MessageJson | null,
      timestamp: row.updatedAt.toISOString(),
      errorMessage: row.errorMessage,
      history: row.history as MessageJson[],
      artifacts,
      metadata: row.metadata,
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      createdAt: row.createdAt.toISOString(),
      lastSeq: row.lastSeq,
    };
  }
}
