import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { Lifecycle } from '../../health/lifecycle.service.js';
import type { Watch } from '../../tasks/event-log/event-log.service.js';
import { TaskService } from '../../tasks/task.service.js';
import type { HeldRun, SendInput } from '../../tasks/task.service.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { PushService, type PushScope } from '../../push/services/push.service.js';
import { QuotaService } from '../../quotas/quota.service.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { SendParams } from '../../a2a-wire/dialects/dialect.js';
import { checkParts } from '../../a2a-wire/dialects/message-input.js';
import type { CallContext } from './call-context.js';

/** A message taken: its task, the log position it was written after, and what a new task brings along. */
export interface TakenMessage {
  taskId: string;
  /** The seq the message was written after (0 for a new task): its answer is what comes after. */
  afterSeq: number;
  /** A new task as created (a continuation is read back by the caller). */
  created?: TaskSnapshot;
  /** A new task's run, held for a blocking send to wait on. */
  run?: HeldRun;
  /** A new streamed task's events, subscribed to before its run started. */
  watch?: Watch;
}

/**
 * SendMessage's intake (spec §3.1.1–3.1.2): the message becomes a new task,
 * or continues the task it names, within the tenant's quotas, with the
 * webhook its configuration asks for (§3.1.7) attached from the first
 * update. Everything that refuses the message does so before a task exists.
 */
@Injectable()
export class MessageIntake {
  constructor(
    private readonly tasks: TaskService,
    private readonly config: AppConfig,
    private readonly lifecycle: Lifecycle,
    private readonly push: PushService,
    private readonly quotas: QuotaService,
  ) {}

  /** Creates the task, or continues the one the message names. `stream`: the new task's events are watched. */
  async take(ctx: CallContext, p: SendParams, stream = false): Promise<TakenMessage> {
    if (this.lifecycle.shuttingDown) {
      // Retryable: another replica (or this one, restarted) takes the message.
      throw new A2aError('internal', 'server is shutting down; retry the request', undefined, { retryable: 'true' });
    }
    checkParts(p.message.parts, 'params.message.parts', this.config);
    const counted = this.quotas.takeSend(ctx.principal);
    if (counted) await counted;
    // A refused webhook refuses the message before any task exists.
    if (p.push) await this.push.checkWebhook(p.push.config.url, p.push.urlField);
    const input: SendInput = { tenantId: ctx.principal.tenantId, agent: ctx.agent, message: p.message };
    if (ctx.principal.subject) input.subject = ctx.principal.subject;
    // The message's push config is stored by the statement that takes the message: with a new task, or with the
    // message that continues one (delivering what follows it).
    const push = p.push && this.push.withMessage(pushScope(ctx), p.push.config, p.push.dialect);
    if (p.message.taskId) {
      // A config the task has no room for refuses the message before it is taken.
      if (p.push) await this.push.checkRoom(pushScope(ctx), p.message.taskId, p.push.config, p.push.dialect);
      const { taskId, seq } = await this.tasks.continue(
        { ...input, taskId: p.message.taskId },
        { runningCap: this.quotas.runningCap(ctx.principal), ...(push ? { push } : {}) },
      );
      if (push) this.push.delivering(taskId);
      return { taskId, afterSeq: seq };
    }
    const { taskId, snapshot, run, watch, duplicate } = await this.quotas.admitRun(ctx.principal, (held, cap) =>
      this.tasks.create(input, { held, watch: stream, runningCap: cap, ...(push ? { push } : {}) }),
    );
    // A messageId sent again gets the task it created — only with the same message: another message is a mistake.
    if (duplicate && !duplicate.sameMessage) {
      throw A2aError.invalidParams(
        'params.message.messageId',
        `'${p.message.messageId.slice(0, 64)}' was already sent with a different message (task '${taskId}'); ` +
          'every new message needs a new messageId (the same message sent again gets the same task)',
      );
    }
    if (p.push && duplicate) {
      // The same message again (a retry): the task has the config its creation stored, if that message carried
      // one; one it did not carry is added, the cursor at 0 (every update of the task, the first status included).
      await this.push.attachOnce(pushScope(ctx), taskId, p.push.config, p.push.dialect, 0);
    } else if (p.push) {
      this.push.delivering(taskId);
    }
    const taken: TakenMessage = { taskId, afterSeq: 0, created: snapshot, run };
    if (watch) taken.watch = watch;
    return taken;
  }
}

/** The push configs a call reaches: its tenant's, on its agent's tasks. */
export function pushScope(ctx: CallContext): PushScope {
  return { tenantId: ctx.principal.tenantId, agentId: ctx.agent.id };
}
