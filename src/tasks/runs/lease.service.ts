import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { safeError } from '../../common/safe-error.js';
import { TaskRepository } from '../repositories/task.repository.js';
import type { Lease } from '../repositories/sql.js';
import { InstanceIdentity } from './instance-identity.js';
import { RunEnd } from './run-end.js';
import { RunRegistry } from './run-registry.js';
import { Metrics } from '../../metrics/metrics.service.js';

/**
 * No task stays running forever. A run holds a lease on its task, renewed
 * every third of `ARBITER_LEASE_MS`; every replica sweeps every quarter of it
 * for running tasks whose lease ran out (their owner died) and ends them
 * `failed` with "owner lost" — all of them, in batches — so an orphan ends
 * within about 1.25 leases of its owner's last renewal plus the sweep itself.
 *
 * Expiry is judged by the database's clock. Each sweep first makes a round
 * trip; a replica that has not been in touch with the database for half a
 * lease (an outage, a hang, or it has just started) sweeps nothing for one
 * lease from then: the owners were likely cut off too, and that is how long
 * they need to renew. A renewal that does not find a held task still leased
 * here means it ended elsewhere: the run reads its log and stops. With the
 * embedded database (one process), what an earlier process left running is
 * ended at start.
 */
@Injectable()
export class LeaseService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Leases');
  private timers: NodeJS.Timeout[] = [];
  /** When this replica last completed a round trip to the database (ms since epoch). */
  private lastContact = 0;
  /** No sweeping before this time (ms since epoch). */
  private quietUntil = 0;
  private sweeping = false;

  constructor(
    private readonly tasks: TaskRepository,
    private readonly registry: RunRegistry,
    private readonly ends: RunEnd,
    private readonly identity: InstanceIdentity,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  lease(): Lease {
    return { owner: this.identity.id, ms: this.config.leaseMs };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.usesEmbeddedDatabase) {
      const ended = await this.ends.endTasks(
        { kind: 'orphans', owner: this.identity.id, held: [], restarted: true },
        { state: 'TASK_STATE_FAILED', error: 'server restarted' },
      );
      if (ended.length) this.logger.warn(`ended ${ended.length} task(s) left running: server restarted`);
    }
    await this.purge();
    const every = (ms: number, fn: () => Promise<unknown>): void => {
      const t = setInterval(() => {
        fn().catch((err: unknown) => this.logger.warn({ err: safeError(err) }, 'lease upkeep failed'));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(Math.max(100, Math.floor(this.config.leaseMs / 3)), () => this.renew());
    every(Math.max(100, Math.floor(this.config.leaseMs / 4)), () => this.sweep());
    every(60 * 60 * 1000, () => this.purge());
  }

  beforeApplicationShutdown(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** Renews the leases of the runs held here; a run whose task is no longer leased here checks its log. */
  async renew(): Promise<void> {
    const runs = this.registry.all();
    if (runs.length === 0) return;
    const kept = new Set(
      await this.tasks.renewLeases(
        this.identity.id,
        runs.map((r) => r.taskId),
        this.config.leaseMs,
      ),
    );
    this.lastContact = Date.now();
    for (const run of runs) if (!kept.has(run.taskId)) this.registry.nudge(run);
  }

  /** The periodic sweep: ends orphans, unless this replica has just been out of touch with the database. */
  async sweep(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const asked = Date.now();
      await this.tasks.ping();
      const now = Date.now();
      if (asked - this.lastContact > this.config.leaseMs / 2 || now - asked > this.config.leaseMs / 4) {
        // Out of touch until now: owners may have been unable to renew as well; give them a lease.
        if (this.lastContact > 0)
          this.logger.log(`database reachable again; sweeping resumes in ${this.config.leaseMs} ms`);
        this.quietUntil = now + this.config.leaseMs;
      }
      this.lastContact = now;
      if (now < this.quietUntil) return 0;
      this.metrics.leaseSweeps.inc();
      const ended = await this.endOrphans();
      this.metrics.orphansEnded.inc(ended);
      this.lastContact = Date.now();
      return ended;
    } finally {
      this.sweeping = false;
    }
  }

  /** Ends every orphaned running task, in batches; returns how many this replica ended. */
  async endOrphans(): Promise<number> {
    const ended = await this.ends.endTasks(
      { kind: 'orphans', owner: this.identity.id, held: this.registry.all().map((r) => r.taskId) },
      { state: 'TASK_STATE_FAILED', error: 'owner lost' },
    );
    if (ended.length) this.logger.warn(`ended ${ended.length} orphaned task(s): owner lost`);
    return ended.length;
  }

  /** Retention: deletes tasks that ended more than `ARBITER_RETENTION_DAYS` ago, in small batches. */
  async purge(): Promise<number> {
    let total = 0;
    for (let i = 0; i < 100; i++) {
      const n = await this.tasks.purgeEnded(this.config.retentionDays, 500);
      total += n;
      if (n < 500) break;
    }
    if (total) this.logger.log(`purged ${total} task(s) that ended over ${this.config.retentionDays} day(s) ago`);
    return total;
  }
}
