import { Injectable, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { readNotice, TASK_EVENTS_CHANNEL } from '../statements/notify.sql.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { EventBus } from './event-bus.js';

/**
 * What other replicas write to task logs, heard over PostgreSQL
 * LISTEN/NOTIFY: every event write sends a notice on commit naming the tasks
 * it wrote and their last seqs (`statements/notify.sql.ts`), and this turns
 * each notice into a poke on the in-process bus. Everyone
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
    this.channel.listen(TASK_EVENTS_CHANNEL, (payload) =>
      readNotice(payload, this.identity.id, (taskId, seq) => this.bus.poke(taskId, seq)),
    );
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
}
