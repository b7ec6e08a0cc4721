import { Injectable, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TASK_EVENTS_CHANNEL } from '../repositories/sql.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { EventBus } from './event-bus.js';

/**
 * What other replicas write to task logs, heard over PostgreSQL
 * LISTEN/NOTIFY: every event write sends `<instance>|<task>|<seq>` on commit
 * (a group commit names all its tasks in one notice),
 * and this turns each notice into a poke on the in-process bus. Everyone
 * watching that task reads the log from where they are: live tails, and the
 * run registry, which hands continuations to the running turn and stops runs
 * whose task ended elsewhere (a cancel, a sweep). A lost or truncated notice
 * cannot lose an event: the log is the truth, and after the notice
 * connection comes back every watcher re-reads it. While it is down, every
 * watcher re-reads the log once a second instead, so hand-offs and live
 * tails go on, slower, rather than stall.
 */
@Injectable()
export class ReplicaNotices implements OnModuleInit, BeforeApplicationShutdown {
  private deaf: NodeJS.Timeout | undefined;

  constructor(
    private readonly channel: ReplicaChannel,
    private readonly bus: EventBus,
    private readonly identity: InstanceIdentity,
  ) {}

  onModuleInit(): void {
    this.channel.listen(TASK_EVENTS_CHANNEL, (payload) => this.onNotice(payload));
    this.channel.onReconnect(() => this.bus.pokeAll());
    if (this.channel.enabled) {
      this.deaf = setInterval(() => {
        if (!this.channel.connected) this.bus.pokeAll();
      }, 1_000);
      this.deaf.unref();
    }
  }

  beforeApplicationShutdown(): void {
    clearInterval(this.deaf);
  }

  /** `<instance>|<task>|<seq>`, or several `<task>|<seq>` pairs after the instance (a group commit). */
  private onNotice(payload: string): void {
    const [instance, ...pairs] = payload.split('|');
    if (!instance || instance === this.identity.id) return;
    for (let k = 0; k + 1 < pairs.length; k += 2) {
      const taskId = pairs[k];
      const seq = Number(pairs[k + 1]);
      if (taskId && Number.isSafeInteger(seq)) this.bus.poke(taskId, seq);
    }
  }
}
