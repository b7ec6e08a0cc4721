import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TASK_EVENTS_CHANNEL } from '../repositories/sql.js';
import { InstanceIdentity } from '../runs/instance-identity.js';
import { EventBus } from './event-bus.js';

/**
 * What other replicas write to task logs, heard over PostgreSQL
 * LISTEN/NOTIFY: every event write sends `<instance>|<task>|<seq>` on commit,
 * and this turns each notice into a poke on the in-process bus. Everyone
 * watching that task reads the log from where they are: live tails, and the
 * run registry, which hands continuations to the running turn and stops runs
 * whose task ended elsewhere (a cancel, a sweep). A lost or truncated notice
 * cannot lose an event: the log is the truth, and after the notice
 * connection comes back every watcher re-reads it.
 */
@Injectable()
export class ReplicaNotices implements OnModuleInit {
  constructor(
    private readonly channel: ReplicaChannel,
    private readonly bus: EventBus,
    private readonly identity: InstanceIdentity,
  ) {}

  onModuleInit(): void {
    this.channel.listen(TASK_EVENTS_CHANNEL, (payload) => this.onNotice(payload));
    this.channel.onReconnect(() => this.bus.pokeAll());
  }

  private onNotice(payload: string): void {
    const [instance, taskId, seqText] = payload.split('|');
    if (!instance || !taskId || !seqText || instance === this.identity.id) return;
    const seq = Number(seqText);
    if (Number.isSafeInteger(seq)) this.bus.poke(taskId, seq);
  }
}
