import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { safeError } from '../../common/safe-error.js';
import { LeaseRepository, type StatementRunner } from '../repositories/leases.repository.js';
import { TaskLogWriter } from '../repositories/task-log.writer.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { LeaseFence } from './lease-fence.js';
import type { Lease } from '../repositories/task-log.types.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { RunEnd } from './run-end.js';
import { RunAbandoned, RunRegistry, type HeldRun } from './run-registry.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { FollowTakeover } from './follow-takeover.service.js';
import { OwnerWatch } from './owner-watch.js';

/**
 * No task stays running forever, and no live run is ended by another
 * replica. A run holds a lease on its task, renewed every third of
 * `ARBITER_LEASE_MS` in one statement for all of the replica's runs, on the
 * replica's own connection (its notice connection, not the pool: renewals
 * never queue behind requests). Every replica sweeps every quarter of a
 * lease and ends a running task `failed` with "owner lost" only when both
 * hold: its lease ran out (by the database's clock), and its owner has been
 * gone for a full lease — its notice connection absent from
 * `pg_stat_activity` at every sweep for that long, watched without a break
 * by this replica, counted from the first sweep that missed it (`OwnerWatch`). A database restart drops every connection, so the count
 * starts again when it is back, and owners reconnect within a second: an
 * outage of any length ends no live run. An owner that is alive but slow
 * (its renewals late) keeps its connection, and its runs. A replica's own
 * tasks whose runs it no longer holds are ended when their lease runs out.
 *
 * The other side (fencing): a replica that has had no answer on its own
 * connection for half a lease could soon be judged gone, so it closes its
 * `LeaseFence` — its runs call no model and run no tool — until it is back
 * and its leases are confirmed; a run whose task was ended meanwhile stops.
 * With the embedded database (one process), what an earlier process left
 * running is ended at start.
 */
@Injectable()
export class LeaseService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Leases');
  private timers: NodeJS.Timeout[] = [];
  /** When this replica last had an answer from the database on its own connection (ms, as the request was sent). */
  private lastContact = Date.now();
  /** Which owners are gone, by this replica's unbroken watch of their connections. */
  private readonly owners: OwnerWatch;
  private sweeping = false;
  private renewing = false;

  constructor(
    private readonly leases: LeaseRepository,
    private readonly writer: TaskLogWriter,
    private readonly registry: RunRegistry,
    private readonly ends: RunEnd,
    private readonly identity: InstanceIdentity,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly channel: ReplicaChannel,
    private readonly fence: LeaseFence,
    private readonly takeover: FollowTakeover,
  ) {
    this.owners = new OwnerWatch(config.leaseMs);
    metrics.onCollect(metrics.runsFenced, (g) => g.set(fence.waiting));
  }

  lease(): Lease {
    return { owner: this.identity.id, ms: this.config.leaseMs };
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.usesEmbeddedDatabase) {
      // A remote-backed task an earlier process was following is resumed (its upstream task may still run).
      await this.takeover
        .takeOver({ restarted: true })
        .catch((err: unknown) => this.logger.warn({ err: safeError(err) }, 'could not take over followed tasks'));
      // A task that cannot be ended now is left to the sweep: it does not keep the server from starting.
      const ended = await this.ends
        .endTasks(
          { kind: 'orphans', owner: this.identity.id, held: [], gone: [], restarted: true },
          { state: 'TASK_STATE_FAILED', error: 'server restarted' },
        )
        .catch((err: unknown) => {
          this.logger.error({ err: safeError(err) }, 'could not end the tasks left running; the sweep tries again');
          return [];
        });
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
    const lease = this.config.leaseMs;
    every(Math.max(100, Math.floor(lease / 3)), () => this.renew());
    every(Math.max(100, Math.floor(lease / 4)), () => this.sweep());
    if (this.channel.enabled) every(Math.max(50, Math.floor(lease / 8)), () => Promise.resolve(this.watchContact()));
    every(60 * 60 * 1000, () => this.purge());
  }

  beforeApplicationShutdown(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.fence.reopen();
  }

  /**
   * Renews the leases of the runs held here, on the replica's own connection
   * (a plain round trip when it holds none, so that it knows it is in touch);
   * a run whose task is no longer leased here checks its log. After the fence
   * was closed, it opens once the runs whose tasks were ended meanwhile know.
   */
  async renew(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      const runs = this.registry.all();
      const sent = Date.now();
      const timeout = Math.max(100, Math.floor(this.config.leaseMs / 3));
      const own: StatementRunner | undefined = this.channel.enabled
        ? (text, values) => this.channel.run(text, values, timeout)
        : undefined;
      const ids = runs.map((r) => r.taskId);
      const kept = new Set(
        ids.length > 0 ? await this.leases.renewLeases(this.identity.id, ids, this.config.leaseMs, own) : [],
      );
      if (ids.length === 0 && own) await own('SELECT 1', []);
      this.lastContact = sent;
      const lost = runs.filter((r) => !kept.has(r.taskId));
      if (lost.length > 0) await this.letGoOfTakenOver(lost);
      if (!this.fence.closed) {
        for (const run of lost) this.registry.nudge(run);
        return;
      }
      // Back in touch: runs whose tasks ended elsewhere learn it before any run acts again.
      await Promise.allSettled(lost.map((run) => this.registry.catchUp(run)));
      this.fence.reopen();
      this.logger.log(`in touch with the database again; ${runs.length - lost.length} run(s) continue`);
    } finally {
      this.renewing = false;
    }
  }

  /**
   * Runs whose task another replica took over while this one was cut off (a remote-backed task's follower) stop
   * and write nothing: the task is that replica's now (their writes are refused anyway, see `RunWriter`).
   */
  private async letGoOfTakenOver(lost: HeldRun[]): Promise<void> {
    const taken = new Set(
      await this.leases.takenOver(
        this.identity.id,
        lost.map((r) => r.taskId),
      ),
    );
    for (const run of lost) {
      if (taken.has(run.taskId) && !run.abort.aborted) {
        run.abort.abort(new RunAbandoned('the task was taken over by another replica'));
      }
    }
  }

  /** Closes the fence once this replica has had no answer on its own connection for half a lease. */
  watchContact(): void {
    if (this.fence.closed || Date.now() - this.lastContact <= this.config.leaseMs / 2) return;
    this.fence.close();
    this.metrics.leaseFences.inc();
    this.logger.warn(
      `no answer from the database for half a lease; ${this.registry.size} run(s) wait before acting until it is back`,
    );
  }

  /** The periodic sweep: ends the running tasks of owners gone for a full lease, and this replica's own strays. */
  async sweep(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const { expired, live } = await this.leases.expiredOwners(this.identity.id);
      // With the embedded database there is one process: no other owner can be alive.
      const gone = this.owners.look(Date.now(), expired, this.channel.enabled ? live : new Set());
      this.metrics.leaseSweeps.inc();
      // Tasks that follow an upstream task are taken over and resumed here; the others end `failed`.
      if (this.takeover.enabled) await this.takeover.takeOver({ gone });
      const ended = await this.endOrphans(gone);
      this.metrics.orphansEnded.inc(ended);
      return ended;
    } finally {
      this.sweeping = false;
    }
  }

  /** Ends, in batches, the expired running tasks of `gone` owners and this replica's own expired strays. */
  async endOrphans(gone: string[]): Promise<number> {
    const ended = await this.ends.endTasks(
      {
        kind: 'orphans',
        owner: this.identity.id,
        // A run that ended here but whose end is still being retried is not a stray: its own end is written.
        held: [...this.registry.all().map((r) => r.taskId), ...this.ends.unrecordedTaskIds],
        gone,
        resumable: this.takeover.enabled,
      },
      { state: 'TASK_STATE_FAILED', error: 'owner lost' },
    );
    if (ended.length) this.logger.warn(`ended ${ended.length} orphaned task(s): owner lost`);
    return ended.length;
  }

  /** Retention: deletes tasks that ended more than `ARBITER_RETENTION_DAYS` ago, in small batches. */
  async purge(): Promise<number> {
    let total = 0;
    for (let i = 0; i < 100; i++) {
      const n = await this.writer.purgeEnded(this.config.retentionDays, 500);
      total += n;
      if (n < 500) break;
    }
    if (total) this.logger.log(`purged ${total} task(s) that ended over ${this.config.retentionDays} day(s) ago`);
    return total;
  }
}
