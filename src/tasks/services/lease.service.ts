import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { safeError } from '../../common/safe-error.js';
import { TaskRepository, type Lease } from '../repositories/task.repository.js';
import { TaskEventBus } from './event-bus.service.js';
import { InFlightRegistry } from './in-flight.registry.js';
import { InstanceIdentity } from './instance-identity.js';

/**
 * No task stays running forever: a run holds a lease on its task, renewed
 * while it runs; any process finds tasks whose lease ran out (their owner
 * died) and ends them `failed` with "owner lost", a terminal event that
 * closes every stream watching them. The embedded database has a single
 * process, so at start it ends what an earlier process left running at once.
 */
@Injectable()
export class LeaseService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Leases');
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly repo: TaskRepository,
    private readonly bus: TaskEventBus,
    private readonly inflight: InFlightRegistry,
    private readonly identity: InstanceIdentity,
    private readonly config: AppConfig,
  ) {}

  lease(): Lease {
    return { owner: this.identity.id, ms: this.config.leaseMs };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.usesEmbeddedDatabase) {
      await this.sweep('server restarted', this.identity.id);
    }
    await this.purge();
    const every = (ms: number, fn: () => Promise<void>): void => {
      const t = setInterval(() => {
        fn().catch((err: unknown) => this.logger.warn({ err: safeError(err) }, 'lease upkeep failed'));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(Math.max(100, Math.floor(this.config.leaseMs / 3)), () =>
      this.repo.renewLeases(
        this.identity.id,
        this.inflight.all().map(([id]) => id),
        this.config.leaseMs,
      ),
    );
    every(Math.max(100, Math.floor(this.config.leaseMs / 2)), async () => {
      await this.sweep('owner lost');
    });
    every(60 * 60 * 1000, async () => {
      await this.purge();
    });
  }

  /** Retention: deletes tasks that ended more than `ARBITER_RETENTION_DAYS` ago, in small batches. */
  async purge(): Promise<number> {
    let total = 0;
    for (let i = 0; i < 100; i++) {
      const n = await this.repo.purgeEnded(this.config.retentionDays, 500);
      total += n;
      if (n < 500) break;
    }
    if (total) this.logger.log(`purged ${total} task(s) that ended over ${this.config.retentionDays} day(s) ago`);
    return total;
  }

  beforeApplicationShutdown(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** Ends orphaned running tasks; the conditional append makes each end exactly once across replicas. */
  async sweep(reason: string, notOwnedBy?: string): Promise<number> {
    let ended = 0;
    for (const taskId of await this.repo.orphaned(100, notOwnedBy)) {
      if (this.inflight.get(taskId)) continue; // ours after all
      const stored = await this.repo.append(
        taskId,
        [
          {
            kind: 'status',
            payload: { state: 'TASK_STATE_FAILED', error: reason, timestamp: new Date().toISOString() },
          },
        ],
        { state: 'TASK_STATE_FAILED', errorMessage: reason, lease: null },
      );
      if (stored) {
        ended++;
        this.bus.publish(taskId, stored);
      }
    }
    if (ended) this.logger.warn(`ended ${ended} orphaned task(s): ${reason}`);
    return ended;
  }
}
