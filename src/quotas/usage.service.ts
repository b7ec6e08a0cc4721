import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { safeError } from '../common/safe-error.js';
import { AppConfig } from '../config/app-config.js';
import { InstanceIdentity } from '../database/instance-identity.js';
import { RunCounts } from '../tasks/run-counts.service.js';

export interface Usage {
  running: number;
  streams: number;
}

/**
 * Each tenant's running tasks and open streams over all replicas, for their
 * caps. This replica's share is counted in memory (runs from the run
 * registry, streams and admissions in flight here); the other replicas'
 * shares come from `replica_usage`, where every replica publishes its own
 * every `ARBITER_QUOTA_SYNC_MS` and reads the others' (rows not refreshed
 * for three intervals — a dead replica's — are ignored and purged). Nothing
 * here touches the database on the request path. The embedded database has
 * one process by construction: nothing to share, no timer.
 */
@Injectable()
export class UsageService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Quotas');
  private readonly streams = new Map<string, number>();
  private readonly admitting = new Map<string, number>();
  private others = new Map<string, Usage>();
  /** Tenants published non-zero last time (so a drop to zero is published once too). */
  private published = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly runs: RunCounts,
    private readonly identity: InstanceIdentity,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.usesEmbeddedDatabase) return;
    this.timer = setInterval(() => void this.sync(), this.config.quotaSyncMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.timer) return;
    clearInterval(this.timer);
    try {
      await this.ds.query(`DELETE FROM replica_usage WHERE replica_id = $1`, [this.identity.id]);
    } catch {
      // Rows of a replica that is gone are ignored after three intervals anyway.
    }
  }

  /** The tenant's usage over all replicas, as of the last sync for the others. */
  of(tenantId: string): Usage {
    const o = this.others.get(tenantId);
    return {
      running: this.runs.of(tenantId) + (this.admitting.get(tenantId) ?? 0) + (o?.running ?? 0),
      streams: (this.streams.get(tenantId) ?? 0) + (o?.streams ?? 0),
    };
  }

  /**
   * The tenant's running tasks on this replica alone (held runs, and
   * creations in flight): a lower bound of its count in the database, which
   * holds the cap exactly over every replica.
   */
  runningHere(tenantId: string): number {
    return this.runs.of(tenantId) + (this.admitting.get(tenantId) ?? 0);
  }

  /** A task being created here: it counts as running from the check until its run is held (or it failed). */
  admit(tenantId: string, delta: 1 | -1): void {
    bump(this.admitting, tenantId, delta);
  }

  stream(tenantId: string, delta: 1 | -1): void {
    bump(this.streams, tenantId, delta);
  }

  sync(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    const mine = new Map<string, Usage>();
    for (const [t, n] of this.runs.byTenant()) mine.set(t, { running: n, streams: 0 });
    for (const [t, n] of this.streams) mine.set(t, { running: mine.get(t)?.running ?? 0, streams: n });
    const zeroed = [...this.published].filter((t) => !mine.has(t));
    const intervalMs = this.config.quotaSyncMs;
    try {
      if (mine.size) {
        const ids = [...mine.keys()];
        await this.ds.query(
          `INSERT INTO replica_usage (replica_id, tenant_id, running, streams, seen_at)
             SELECT $1, t, r, s, now() FROM unnest($2::uuid[], $3::int[], $4::int[]) AS u(t, r, s)
           ON CONFLICT (replica_id, tenant_id)
             DO UPDATE SET running = EXCLUDED.running, streams = EXCLUDED.streams, seen_at = now()`,
          [this.identity.id, ids, ids.map((t) => mine.get(t)!.running), ids.map((t) => mine.get(t)!.streams)],
        );
      }
      if (zeroed.length) {
        await this.ds.query(`DELETE FROM replica_usage WHERE replica_id = $1 AND tenant_id = ANY($2::uuid[])`, [
          this.identity.id,
          zeroed,
        ]);
      }
      this.published = new Set(mine.keys());
      const rows: { tenant_id: string; running: string; streams: string }[] = await this.ds.query(
        `SELECT tenant_id, sum(running) AS running, sum(streams) AS streams FROM replica_usage
          WHERE replica_id <> $1 AND seen_at > now() - make_interval(secs => $2::float8 / 1000)
          GROUP BY tenant_id`,
        [this.identity.id, intervalMs * 3],
      );
      this.others = new Map(rows.map((r) => [r.tenant_id, { running: Number(r.running), streams: Number(r.streams) }]));
      if (Math.random() < 0.02) {
        await this.ds.query(`DELETE FROM replica_usage WHERE seen_at < now() - interval '10 minutes'`);
      }
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not share running-task and stream counts');
    }
  }
}

function bump(m: Map<string, number>, key: string, delta: number): void {
  const n = (m.get(key) ?? 0) + delta;
  if (n > 0) m.set(key, n);
  else m.delete(key);
}
