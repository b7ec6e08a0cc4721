import { Injectable } from '@nestjs/common';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { AppConfig } from '../../config/app-config.js';
import { TaskService, type HeldRun } from '../../tasks/task.service.js';
import { abortable } from '../../common/abortable.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { isSettled, isTerminal } from '../../tasks/task-state.js';
import type { PushConfigView } from '../../a2a-wire/push-config.js';
import { PushService } from '../../push/services/push.service.js';
import { QuotaService } from '../../quotas/quota.service.js';
import { A2aError, type Dialect } from '../../a2a-wire/a2a-errors.js';
import type { GetParams, IdParams, ListParams, ListResult, SendParams } from '../../a2a-wire/dialects/dialect.js';
import type {
  PushDeleteParams,
  PushGetParams,
  PushListParams,
  PushSetParams,
} from '../../a2a-wire/dialects/push-params.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { UpstreamCards } from '../services/upstream-card.js';
import { CardSigner } from '../services/card-signer.service.js';
import type { A2aStream, CallContext } from './call-context.js';
import { MessageIntake, pushScope } from './message-intake.js';
import { finalStatusOnly, TaskStreams, trimmed } from './task-streams.js';
import { upstreamRefusal } from './upstream-refusal.js';

export type { A2aStream, CallContext } from './call-context.js';

/**
 * The A2A operations (spec §3.1), one typed method each, behind every
 * binding and both dialects: internal shapes in and out; the bindings parse
 * and render. Tasks are the engine's; this adds the protocol's rules.
 */
@Injectable()
export class A2aRequestHandler {
  constructor(
    private readonly tasks: TaskService,
    private readonly intake: MessageIntake,
    private readonly streams: TaskStreams,
    private readonly config: AppConfig,
    private readonly cards: AgentCardService,
    private readonly push: PushService,
    private readonly quotas: QuotaService,
    private readonly files: TaskFiles,
    private readonly signer: CardSigner,
    private readonly upstreams: UpstreamCards,
  ) {}

  /**
   * §3.1.1: runs the message; blocking (the default) returns the task once it is terminal or interrupted — or,
   * when a remote-backed agent's upstream refused the message, its error (§3.3.2; see `upstreamRefusal`).
   */
  async sendMessage(ctx: CallContext, p: SendParams): Promise<TaskSnapshot> {
    const { taskId, afterSeq, created, run } = await this.intake.take(ctx, p);
    if (p.returnImmediately) {
      const task = created ?? (await this.tasks.get(ctx.principal.tenantId, taskId));
      return this.streams.withFiles(ctx, task, { historyLength: p.historyLength });
    }
    // A run that settled by now (an in-process model's turn is written with its creation) says how the task
    // stands: no wait to set up.
    const task =
      run?.settledTask ?? (await this.tasks.settled(ctx.principal.tenantId, taskId, afterSeq, () => ctx.signal, run));
    const refused = upstreamRefusal(task);
    if (refused) throw refused;
    return this.streams.withFiles(ctx, task, { historyLength: p.historyLength });
  }

  /** §3.1.2: the task, then its events until it is terminal or interrupted after this message. */
  async sendStreamingMessage(ctx: CallContext, p: SendParams): Promise<A2aStream> {
    // The stream's slot first: a tenant at its stream cap gets no task it cannot watch.
    return this.withStreamSlot(ctx, async (release) => {
      const { taskId, created, afterSeq, watch, run } = await this.intake.take(ctx, p, true);
      const first = created ?? (await this.tasks.get(ctx.principal.tenantId, taskId));
      try {
        await this.refusedFirst(ctx, first, run);
      } catch (err) {
        watch?.close();
        throw err;
      }
      return {
        task: { id: first.id, contextId: first.contextId },
        items: this.streams.follow(ctx, first, isSettled, afterSeq, { historyLength: p.historyLength }, watch),
        release,
      };
    });
  }

  /** §3.1.3 */
  async getTask(ctx: CallContext, p: GetParams): Promise<TaskSnapshot> {
    const task = await this.tasks.get(ctx.principal.tenantId, p.id, ctx.agent.id);
    return this.streams.withFiles(ctx, task, { historyLength: p.historyLength });
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
    return this.streams.withFiles(
      ctx,
      await this.tasks.cancel(ctx.principal.tenantId, p.id, { agentId: ctx.agent.id }),
      {},
    );
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
        items: this.streams.follow(ctx, task, isTerminal, 0, {}),
        release: this.quotas.openStream(ctx.principal),
      };
    }
    if (isTerminal(task.state)) return { task: ref, items: finalStatusOnly(task), release: () => undefined };
    return { task: ref, items: this.streams.replay(ctx, task.id), release: this.quotas.openStream(ctx.principal) };
  }

  /**
   * A remote-backed agent's new stream sends nothing before its upstream has answered (or refused) the message,
   * so that a refusal is the stream's answer — an error, as the upstream's own stream would answer it (§3.1.2).
   * The same message sent again gets the refusal too.
   */
  private async refusedFirst(ctx: CallContext, first: TaskSnapshot, run: HeldRun | undefined): Promise<void> {
    let task: TaskSnapshot | null | undefined = first;
    if (run && ctx.agent.constitution.backend) {
      task = await abortable(Promise.race([run.answered.then(() => undefined), run.settled]), ctx.signal);
    }
    const refused = task ? upstreamRefusal(task) : undefined;
    if (refused) throw refused;
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
    return this.push.create(pushScope(ctx), p.taskId, p.config, p.dialect, p.urlField);
  }

  /** §3.1.8 */
  getTaskPushNotificationConfig(ctx: CallContext, p: PushGetParams): Promise<PushConfigView> {
    return this.push.get(pushScope(ctx), p.taskId, p.id);
  }

  /** §3.1.9 */
  listTaskPushNotificationConfigs(ctx: CallContext, p: PushListParams): Promise<PushConfigView[]> {
    return this.push.list(pushScope(ctx), p.taskId);
  }

  /** §3.1.10: idempotent. */
  deleteTaskPushNotificationConfig(ctx: CallContext, p: PushDeleteParams): Promise<void> {
    return this.push.delete(pushScope(ctx), p.taskId, p.id);
  }

  /**
   * §3.1.11, §13.3: the extended card of the URL's agent, for the caller
   * the guard authenticated (an unauthenticated request never gets here:
   * 401). The agent was resolved for the caller's tenant, so another
   * tenant's agent is "not found" before this runs. Signed (§8.4) when a key is configured.
   */
  async getExtendedAgentCard(ctx: CallContext, dialect: Dialect): Promise<Record<string, unknown>> {
    const base = ctx.baseUrl ?? this.cards.configuredBaseUrl();
    const upstream = await this.upstreams.profile(ctx.principal.tenantId, ctx.agent);
    const card =
      dialect === '1.0'
        ? await this.cards.v1ExtendedCard(ctx.agent, base, ctx.principal.tenantId, upstream)
        : await this.cards.compatExtendedCard(ctx.agent, base, ctx.principal.tenantId, upstream);
    return this.signer.sign(card, base);
  }
}
