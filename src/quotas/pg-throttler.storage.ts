import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { safeError } from '../common/safe-error.js';
import { AppConfig } from '../config/app-config.js';

interface ThrottlerStorageRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/** One fixed window of one key, as this replica sees it. */
interface Window {
  key: string;
  start: number;
  endsAt: number;
  /** Hits of every replica as PostgreSQL last told us (ours that were synced included). */
  shared: number;
  /** Our hits not yet added to the shared count. */
  pending: number;
}

/**
 * `@nestjs/throttler`'s storage, shared by every replica through PostgreSQL
 * without a database round trip on the request path: each replica counts in
 * memory and, every `ARBITER_QUOTA_SYNC_MS`, adds its new hits to the
 * window's row (`INSERT … ON CONFLICT DO UPDATE … RETURNING`) and learns the
 * other replicas' total. A request is judged on the shared count as of the
 * last sync plus this replica's hits since — so replicas together may
 * overshoot a limit by what they admit within one sync interval. Fixed
 * windows of `ttl`; a refused hit is not counted.
 */
@Injectable()
export class PgThrottlerStorage implements ThrottlerStorage, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Quotas');
  private readonly windows = new Map<string, Window>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private lastPurge = 0;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sync(), this.config.quotaSyncMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.sync();
  }

  increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    const start = Math.floor(now / ttl) * ttl;
    const id = `${key}|${start}`;
    let w = this.windows.get(id);
    if (!w) {
      w = { key, start, endsAt: start + ttl, shared: 0, pending: 0 };
      this.windows.set(id, w);
    }
    const timeToExpire = Math.max(1, Math.ceil((w.endsAt - now) / 1000));
    const hits = w.shared + w.pending;
    if (hits >= limit) {
      // Fixed windows: a refused client may try again when this one ends.
      return Promise.resolve({ totalHits: hits + 1, timeToExpire, isBlocked: true, timeToBlockExpire: timeToExpire });
    }
    w.pending += 1;
    return Promise.resolve({ totalHits: hits + 1, timeToExpire, isBlocked: false, timeToBlockExpire: 0 });
  }

  /** Adds this replica's new hits to the shared counts and reads the others'; drops ended windows. */
  sync(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    const now = Date.now();
    for (const [id, w] of this.windows) if (w.endsAt <= now) this.windows.delete(id);
    const live = [...this.windows.values()];
    if (live.length === 0) return;
    const sent = live.map((w) => w.pending);
    try {
      type Row = { key: string; window_start: string; hits: number };
      const raw: Row[] | [Row[], number] = await this.ds.query(
        `INSERT INTO rate_windows (key, window_start, hits, expires_at)
           SELECT k, s, h, to_timestamp(e / 1000.0)
             FROM unnest($1::varchar[], $2::bigint[], $3::int[], $4::bigint[]) AS u(k, s, h, e)
         ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_windows.hits + EXCLUDED.hits
         RETURNING key, window_start, hits`,
        [live.map((w) => w.key), live.map((w) => w.start), sent, live.map((w) => w.endsAt)],
      );
      const rows = (Array.isArray(raw[0]) ? raw[0] : raw) as Row[];
      for (let i = 0; i < live.length; i++) live[i].pending -= sent[i];
      for (const r of rows) {
        const w = this.windows.get(`${r.key}|${r.window_start}`);
        if (w) w.shared = Number(r.hits);
      }
      if (now - this.lastPurge > 60_000) {
        this.lastPurge = now;
        await this.ds.query(`DELETE FROM rate_windows WHERE expires_at < now() - interval '1 minute'`);
      }
    } catch (err) {
      // Counting goes on in memory; the next sync adds what accumulated.
      this.logger.warn({ err: safeError(err) }, 'could not share rate-limit counts');
    }
  }
}
