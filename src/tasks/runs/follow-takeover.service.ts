import { Inject, Injectable, Logger } from '@nestjs/common';
import { safeError } from '../../common/safe-error.js';
import { AppConfig } from '../../config/app-config.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { ORCHESTRATOR, type Orchestrator } from '../../orchestrator/run-event.js';
import { EventReads } from '../repositories/event-reads.repository.js';
import { LeaseRepository, type ClaimedTask } from '../repositories/leases.repository.js';
import { foldArtifacts } from '../task-events.js';
import { RunEnd } from './run-end.js';
import { TaskRunner } from './task-runner.service.js';

const BATCH = 50;

/**
 * Following survives a replica's death. A remote-backed agent's task bound to its upstream task needs no
 * model and holds nothing but the upstream's task id: when its owner is gone (judged by `LeaseService`, as for
 * every run), a live replica takes its lease over and resumes its run, which reconciles with the upstream task
 * (GetTask, then SubscribeToTask when the upstream streams) and follows it on (see `remoteTurn`). A task that
 * cannot be resumed — its agent is no longer remote-backed, or its log cannot be read — ends `failed` with
 * "owner lost" like any orphan.
 */
@Injectable()
export class FollowTakeover {
  private readonly logger = new Logger('FollowTakeover');

  constructor(
    private readonly leases: LeaseRepository,
    private readonly events: EventReads,
    private readonly runner: TaskRunner,
    private readonly ends: RunEnd,
    private readonly identity: InstanceIdentity,
    private readonly config: AppConfig,
    @Inject(ORCHESTRATOR) private readonly orchestrator: Orchestrator,
  ) {}

  /** Whether this replica can resume followed tasks (its orchestrator knows remote-backed agents). */
  get enabled(): boolean {
    return typeof this.orchestrator.remoteBackedAgent === 'function';
  }

  /** Takes over and resumes the followed tasks of `gone` owners (or, `restarted`, every one not leased here). */
  async takeOver(from: { gone: string[] } | { restarted: true }): Promise<number> {
    if (!this.enabled || ('gone' in from && from.gone.length === 0)) return 0;
    let total = 0;
    for (;;) {
      const claimed = await this.leases.claimFollowed(this.identity.id, from, this.config.leaseMs, BATCH);
      for (const task of claimed) await this.resume(task);
      total += claimed.length;
      if (claimed.length < BATCH) break;
    }
    if (total) this.logger.warn(`took over ${total} task(s) following an upstream task whose replica was lost`);
    return total;
  }

  private async resume(task: ClaimedTask): Promise<void> {
    try {
      const agent = await this.orchestrator.remoteBackedAgent?.(task.tenantId, task.agentId);
      if (!agent) throw new Error('the agent is no longer backed by a remote agent');
      const log = await this.events.events(task.tenantId, task.taskId, 0);
      // What the log holds: every message id (the user's, the upstream's status messages and replies), the
      // artifacts as folded, and the newest user message (the input the run is answering).
      const loggedMessageIds: string[] = [];
      let input: { messageId: string; seq: number } | undefined;
      for (const e of log) {
        if (e.kind === 'message') {
          loggedMessageIds.push(e.payload.message.messageId);
          input = { messageId: e.payload.message.messageId, seq: e.seq };
        } else if (e.kind === 'status' && e.payload.message) loggedMessageIds.push(e.payload.message.messageId);
      }
      if (!input) throw new Error('the task has no message');
      const artifacts = foldArtifacts(task.artifacts, log);
      this.runner.start({
        ctx: {
          tenantId: task.tenantId,
          agent,
          taskId: task.taskId,
          contextId: task.contextId,
          metadata: task.metadata,
          loggedMessageIds,
        },
        first: { text: '', messageId: input.messageId, seq: input.seq, resume: true },
        cursor: log.at(-1)?.seq ?? task.lastSeq,
        artifacts,
        tokens: { input: task.inputTokens, output: task.outputTokens },
        catchUp: true,
      });
    } catch (err) {
      this.logger.warn({ err: safeError(err), taskId: task.taskId }, 'could not resume a task taken over; ending it');
      await this.ends.endTasks(
        { kind: 'task', tenantId: task.tenantId, taskId: task.taskId },
        { state: 'TASK_STATE_FAILED', error: 'owner lost' },
      );
    }
  }
}
