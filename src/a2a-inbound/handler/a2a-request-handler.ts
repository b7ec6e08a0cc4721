import { Injectable } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { AppConfig } from '../../config/app-config.js';
import { Lifecycle } from '../../health/lifecycle.service.js';
import type { ResolvedAgent } from '../../registry/services/agents.js';
import { EventLog, type Watch } from '../../tasks/event-log/event-log.service.js';
import { TaskService, type HeldRun } from '../../tasks/task.service.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { isSettled, isTerminal } from '../../tasks/task-state.js';
import type { PushConfigView } from '../../push/push-config.js';
import { PushService, type PushScope } from '../../push/services/push.service.js';
import { A2aError, type Dialect } from '../../a2a-wire/a2a-errors.js';
import type {
  GetParams,
  IdParams,
  ListParams,
  ListResult,
  SendParams,
  StreamItem,
  TaskView,
} from '../../a2a-wire/dialects/dialect.js';
import { trimHistory } from '../../a2a-wire/dialects/dialect.js';
import { checkParts } from '../../a2a-wire/dialects/message-input.js';
import type {
  PushDeleteParams,
  PushGetParams,
  PushListParams,
  PushSetParams,
} from '../../a2a-wire/dialects/push-params.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { QuotaService } from '../../quotas/quota.service.js';

/** Who calls, on which agent; `signal` aborts when the client goes away (it stops streams, never the task). */
export interface CallContext {
  principal: TenantPrincipal;
  agent: ResolvedAgent;
  signal: AbortSignal;
  /** The public base URL the request came in on (`AgentCardService.baseUrl`), for cards; else the configured one. */
  baseUrl?: string;
}

/** A stream's task and its items (the task first, then events from its log). */
export interface A2aStream {
  task: { id: string; contextId: string };
  items: AsyncIterable<StreamItem>;
  /** Frees the tenant's stream slot: the binding calls it when the response closes. */
  release: () => void;
}

/**
 * The A2A operations (spec §3.1), one typed method each, behind every
 * binding and both dialects: internal shapes in and out; the bindings parse
 * and render. Tasks are the engine's; this adds the protocol's rules.
 */
@Injectable()
export class A2aRequestHandler {
  constructor(
    private readonly tasks: TaskService,
    private readonly log: EventLog,
    private readonly config: AppConfig,
    private readonly lifecycle: Lifecycle,
    private readonly cards: AgentCardService,
    private readonly push: PushService,
    private readonly quotas: QuotaService,
    private readonly files: TaskFiles,
  ) {}

  /** §3.1.1: runs the message; blocking (the default) returns the task once it is terminal or interrupted. */
  async sendMessage(ctx: CallContext, p: SendParams): Promise<TaskSnapshot> {
    const { taskId, afterSeq, created, run } = await this.start(ctx, p);
    const task = p.returnImmediately
      ? (created ?? (await this.tasks.get(ctx.principal.tenantId, taskId)))
      : await this.tasks.settled(ctx.principal.tenantId, taskId, afterSeq, ctx.signal, run);
    return this.withFiles(ctx, task, { historyLength: p.historyLength });
  }

  /** §3.1.2: the task, then its events until it is terminal or interrupted after this message. */
  async sendStreamingMessage(ctx: CallContext, p: SendParams): Promise<A2aStream> {
    // The stream's slot first: a tenant at its stream cap gets no task it cannot watch.
    return this.withStreamSlot(ctx, async (release) => {
      const { taskId, created, afterSeq, watch } = await this.start(ctx, p, true);
      const first = created ?? (await this.tasks.get(ctx.principal.tenantId, taskId));
      return {
        task: { id: first.id, contextId: first.contextId },
        items: this.follow(ctx, first, isSettled, afterSeq, { historyLength: p.historyLength }, watch),
        release,
      };
    });
  }

  /** §3.1.3 */
  async getTask(ctx: CallContext, p: GetParams): Promise<TaskSnapshot> {
    const task = await this.tasks.get(ctx.principal.tenantId, p.id, ctx.agent.id);
    return this.withFiles(ctx, task, { historyLength: p.historyLength });
  }

  /** §3.1.4: the agent's tasks, newest status first, by opaque page token. */
  async listTasks(ctx: CallContext, p: ListParams): Promise<ListResult> {
    let before: { updatedAt: string; taskId: string } | undefined;
    try {
      const c = decodeCursor(p.pageToken, ['u', 't'] as const, { u: CURSOR_FIELDS.timestamp, t: CURSOR_FIELDS.taskId });
      before = c ? { updatedAt: c.u, taskId: c.t } : undefined;
    } catch (err) {
      if (err instanceof DomainError)
        throw A2aError.invalidParams('params.pageToken', 'is not a token this server issued');
      throw err;
    }
    const view = { historyLength: p.historyLength, includeArtifacts: p.includeArtifacts };
    const { tasks, total, more, last } = await this.tasks.list(
      {
        tenantId: ctx.principal.tenantId,
        agentId: ctx.agent.id,
        contextId: p.contextId,
        state: p.state,
        updatedAfter: p.statusTimestampAfter,
        limit: p.pageSize,
        before,
      },
      { historyLength: p.historyLength, includeArtifacts: p.includeArtifacts !== false },
    );
    // Besides its content's byte budget, a page carries at most twice a message's file allowance of file bytes.
    const page = await this.files.page(
      ctx.principal.tenantId,
      { tasks: tasks.map((t) => trimmed(t, view)), more, last },
      2 * this.config.maxMessageFileBytes,
    );
    return {
      tasks: page.tasks,
      nextPageToken: page.next ? encodeCursor({ u: page.next.updatedAt, t: page.next.taskId }) : '',
      pageSize: p.pageSize,
      totalSize: total,
      view,
    };
  }

  /** §3.1.5 */
  async cancelTask(ctx: CallContext, p: IdParams): Promise<TaskSnapshot> {
    return this.withFiles(ctx, await this.tasks.cancel(ctx.principal.tenantId, p.id, { agentId: ctx.agent.id }), {});
  }

  /** The task as a client reads it: what the view shows, with stored files' bytes back in their parts. */
  private withFiles(ctx: CallContext, task: TaskSnapshot, view: TaskView): Promise<TaskSnapshot> {
    return this.files.task(ctx.principal.tenantId, trimmed(task, view));
  }

  /**
   * §3.1.6: the current task, then live events until it is terminal; a
   * terminal task is an error. `replay` is v0.3's `tasks/resubscribe` (seed
   * 002): the whole log from the start, and a terminal task gets its final status.
   */
  async subscribeToTask(ctx: CallContext, p: IdParams, replay: boolean): Promise<A2aStream> {
    const task = await this.tasks.get(ctx.principal.tenantId, p.id, ctx.agent.id);
    const ref = { id: task.id, contextId: task.contextId };
    if (!replay) {
      if (isTerminal(task.state)) {
        throw new A2aError(
          'unsupported_operation',
          `task '${task.id}' is ${task.state}; there is nothing to subscribe to`,
        );
      }
      return {
        task: ref,
        items: this.follow(ctx, task, isTerminal, 0, {}),
        release: this.quotas.openStream(ctx.principal),
      };
    }
    if (isTerminal(task.state)) return { task: ref, items: finalStatusOnly(task), release: () => undefined };
    return { task: ref, items: this.replay(ctx, task.id), release: this.quotas.openStream(ctx.principal) };
  }

  private async withStreamSlot(
    ctx: CallContext,
    open: (release: () => void) => Promise<A2aStream>,
  ): Promise<A2aStream> {
    const release = this.quotas.openStream(ctx.principal);
    try {
      return await open(release);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** §3.1.7: a webhook for the task's updates from now on (the same id replaces a config, and revives a dead one). */
  createTaskPushNotificationConfig(ctx: CallContext, p: PushSetParams): Promise<PushConfigView> {
    return this.push.create(this.scope(ctx), p.taskId, p.config, p.dialect, p.urlField);
  }

  /** §3.1.8 */
  getTaskPushNotificationConfig(ctx: CallContext, p: PushGetParams): Promise<PushConfigView> {
    return this.push.get(this.scope(ctx), p.taskId, p.id);
  }

  /** §3.1.9 */
  listTaskPushNotificationConfigs(ctx: CallContext, p: PushListParams): Promise<PushConfigView[]> {
    return this.push.list(this.scope(ctx), p.taskId);
  }

  /** §3.1.10: idempotent. */
  deleteTaskPushNotificationConfig(ctx: CallContext, p: PushDeleteParams): Promise<void> {
    return this.push.delete(this.scope(ctx), p.taskId, p.id);
  }

  /**
   * §3.1.11, §13.3: the extended card of the URL's agent, for the caller
   * the guard authenticated (an unauthenticated request never gets here:
   * 401). The agent was resolved for the caller's tenant, so another
   * tenant's agent is "not found" before this runs.
   */
  getExtendedAgentCard(ctx: CallContext, dialect: Dialect): Record<string, unknown> {
    const base = ctx.baseUrl ?? this.cards.configuredBaseUrl();
    return dialect === '1.0'
      ? this.cards.v1ExtendedCard(ctx.agent, base)
      : this.cards.compatExtendedCard(ctx.agent, base);
  }

  /** Creates the task, or continues the one the message names. */
  private async start(
    ctx: CallContext,
    p: SendParams,
    stream = false,
  ): Promise<{ taskId: string; afterSeq: number; created?: TaskSnapshot; run?: HeldRun; watch?: Watch }> {
    if (this.lifecycle.shuttingDown) {
      // Retryable: another replica (or this one, restarted) takes the message.
      throw new A2aError('internal', 'server is shutting down; retry the request', undefined, { retryable: 'true' });
    }
    checkParts(p.message.parts, 'params.message.parts', this.config);
    await this.quotas.takeSend(ctx.principal);
    // A refused webhook refuses the message before any task exists.
    if (p.push) await this.push.checkWebhook(p.push.config.url, p.push.urlField);
    const input = { tenantId: ctx.principal.tenantId, agent: ctx.agent, message: p.message };
    if (p.message.taskId) {
      // A config the task has no room for refuses the message before it is taken.
      if (p.push) await this.push.checkRoom(this.scope(ctx), p.message.taskId, p.push.config, p.push.dialect);
      const { taskId, seq } = await this.tasks.continue(
        { ...input, taskId: p.message.taskId },
        { runningCap: this.quotas.runningCap(ctx.principal) },
      );
      if (p.push) await this.push.attach(this.scope(ctx), taskId, p.push.config, p.push.dialect, seq - 1);
      return { taskId, afterSeq: seq };
    }
    const { taskId, snapshot, run, watch, duplicate } = await this.quotas.admitRun(ctx.principal, (held, cap) =>
      this.tasks.create(input, { held, watch: stream, runningCap: cap }),
    );
    // A messageId sent again gets the task it created — only with the same message: another message is a mistake.
    if (duplicate && !duplicate.sameMessage) {
      throw A2aError.invalidParams(
        'params.message.messageId',
        `'${p.message.messageId.slice(0, 64)}' was already sent with a different message (task '${taskId}'); ` +
          'every new message needs a new messageId (the same message sent again gets the same task)',
      );
    }
    try {
      // The cursor at 0: the webhook gets every update of the new task, the first status included.
      if (p.push) await this.push.attach(this.scope(ctx), taskId, p.push.config, p.push.dialect, 0);
    } catch (err) {
      watch?.close();
      throw err;
    }
    return { taskId, afterSeq: 0, created: snapshot, run, ...(watch ? { watch } : {}) };
  }

  private scope(ctx: CallContext): PushScope {
    return { tenantId: ctx.principal.tenantId, agentId: ctx.agent.id };
  }

  /**
   * The task, then its events until `stopAt`. `watch`: the new task's events
   * were subscribed to before its run started (no backlog to read).
   */
  private async *follow(
    ctx: CallContext,
    first: TaskSnapshot,
    stopAt: (state: string) => boolean,
    afterSeq: number,
    view: { historyLength?: number },
    watch?: Watch,
  ): AsyncGenerator<StreamItem> {
    try {
      yield { type: 'task', task: await this.withFiles(ctx, first, view), view };
      // Already there: terminal, or settled after this message (a continuation that ran fast).
      if (isTerminal(first.state) || (stopAt(first.state) && (afterSeq === 0 || first.lastSeq > afterSeq))) return;
      for await (const event of this.log.tail(ctx.principal.tenantId, first.id, first.lastSeq, ctx.signal, watch)) {
        // A continuation's stream ends at a settled state written after its message, not at the one it continued.
        const final = event.kind === 'status' && event.seq > afterSeq && stopAt(event.payload.state);
        yield { type: 'event', event: await this.files.event(ctx.principal.tenantId, event), final };
        if (final) return;
      }
    } finally {
      watch?.close();
    }
  }

  private async *replay(ctx: CallContext, taskId: string): AsyncGenerator<StreamItem> {
    for await (const event of this.log.tail(ctx.principal.tenantId, taskId, 0, ctx.signal)) {
      const final = event.kind === 'status' && isTerminal(event.payload.state);
      yield { type: 'event', event: await this.files.event(ctx.principal.tenantId, event), final };
    }
  }
}

/**
 * Only what a view shows (history trimmed per §3.2.4, artifacts only when
 * asked for), so that no file is read for a part the client does not get.
 */
function trimmed(t: TaskSnapshot, view: TaskView): TaskSnapshot {
  const history = trimHistory(t.history, view.historyLength) ?? [];
  const artifacts = view.includeArtifacts === false ? [] : t.artifacts;
  return history === t.history && artifacts === t.artifacts ? t : { ...t, history, artifacts };
}

async function* finalStatusOnly(task: TaskSnapshot): AsyncGenerator<StreamItem> {
  await Promise.resolve();
  yield {
    type: 'event',
    final: true,
    event: {
      taskId: task.id,
      seq: task.lastSeq,
      createdAt: task.timestamp,
      kind: 'status',
      payload: {
        state: task.state,
        ...(task.statusMessage ? { message: task.statusMessage } : {}),
        ...(task.errorMessage ? { error: task.errorMessage } : {}),
        timestamp: task.timestamp,
      },
    },
  };
}
