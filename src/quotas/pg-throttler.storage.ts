import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { safeError } from '../common/safe-error.js';
import { AppConfig } from '../config/app-config.js';
import { NOTICE_CONNECTION_PREFIX } from '../database/instance-identity.js';

interface ThrottlerStorageRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

/** One fixed window of one key, as this replica holds it. */
interface Window {
  key: string;
  start: number;
  endsAt: number;
  limit: number;
  /** Hits this replica may still admit: granted by the database, not used yet. */
  tokens: number;
  /** Hits admitted here in this window. */
  used: number;
  /** Hits admitted here since the last sync (a window idle since gives its tokens back). */
  recent: number;
  /** The window's total (admitted or granted, every replica) as the last grant left it. */
  total: number;
  /** The last grant found nothing left: refused until a sync finds room (tokens another replica gave back). */
  full: boolean;
  /** A grant on its way: requests wait for it rather than ask again. */
  granting?: Promise<void>;
  /** Whether the last grant reached the database (a request that waited on one that did not gives up). */
  grantOk?: boolean;
}

/**
 * `@nestjs/throttler`'s storage, shared by every replica through PostgreSQL,
 * exact across them: a replica admits only hits the database granted it.
 * A window's row counts what every replica has admitted or holds granted,
 * never more than the limit (one conditional `UPDATE` decides, whatever
 * replicas ask at once). A replica asks for its share of what is left —
 * `ceil(left / replicas)` — when its tokens run out (one round trip per
 * share, not per request: the requests that arrive meanwhile wait for it),
 * and every `ARBITER_QUOTA_SYNC_MS` gives back what it holds unused (an idle
 * window all of it; a busy one takes a fresh share), so that tokens parked
 * on one replica flow to the others within a sync interval. A refused hit
 * is not counted. Fixed windows of `ttl`.
 */
@Injectable()
export class PgThrottlerStorage implements ThrottlerStorage, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Quotas');
  private readonly windows = new Map<string, Window>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private lastPurge = 0;
  /** Replicas sharing the windows (their notice connections), as last counted; 1 with the embedded database. */
  private replicas = 1;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.timer = setInterval(() => void this.sync(), this.config.quotaSyncMs);
    this.timer.unref();
    await this.countReplicas();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    // What this replica holds unused goes back for the others.
    const live = [...this.windows.values()].filter((w) => w.tokens > 0 && w.endsAt > Date.now());
    await this.grant(live, false).catch(() => undefined);
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    const start = Math.floor(now / ttl) * ttl;
    const id = `${key}|${start}`;
    let w = this.windows.get(id);
    if (!w) {
      w = { key, start, endsAt: start + ttl, limit, tokens: 0, used: 0, recent: 0, total: 0, full: false };
      this.windows.set(id, w);
    }
    w.limit = limit;
    // Out of tokens: ask for a share (requests that arrive meanwhile wait for the same answer), and again while
    // other waiters took what came — until a token is ours, the window is full, or the database cannot be asked.
    for (let asked = false; w.tokens === 0 && !w.full; asked = true) {
      if (!w.granting) {
        if (asked && !w.grantOk) break;
        void this.grant([w], true).catch((err: unknown) =>
          this.logger.warn({ err: safeError(err) }, 'could not take a share of a rate limit'),
        );
      }
      await w.granting;
      if (!w.grantOk) break;
    }
    const timeToExpire = Math.max(1, Math.ceil((w.endsAt - Date.now()) / 1000));
    if (w.tokens > 0) {
      w.tokens--;
      w.used++;
      w.recent++;
      return { totalHits: w.total - w.tokens, timeToExpire, isBlocked: false, timeToBlockExpire: 0 };
    }
    // Full: try again when the window ends. Out of tokens otherwise (the database could not be asked): after a sync.
    const retry = w.full ? timeToExpire : Math.max(1, Math.ceil(this.config.quotaSyncMs / 1000));
    return { totalHits: w.limit + 1, timeToExpire, isBlocked: true, timeToBlockExpire: retry };
  }

  /** Gives back unused tokens (an idle window) or takes a fresh share (a busy or full one); counts the replicas. */
  sync(): Promise<void> {
    this.syncing ??= this.syncOnce().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    const now = Date.now();
    for (const [id, w] of this.windows) if (w.endsAt <= now) this.windows.delete(id);
    await this.countReplicas();
    const idle = [...this.windows.values()].filter((w) => !w.granting && w.recent === 0 && !w.full && w.tokens > 0);
    const busy = [...this.windows.values()].filter((w) => !w.granting && (w.recent > 0 || w.full));
    for (const w of [...idle, ...busy]) w.recent = 0;
    try {
      if (idle.length) await this.grant(idle, false);
      if (busy.length) await this.grant(busy, true);
      if (now - this.lastPurge > 60_000) {
        this.lastPurge = now;
        await this.ds.query(`DELETE FROM rate_windows WHERE expires_at < now() - interval '1 minute'`);
      }
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not share rate-limit counts');
    }
  }

  /**
   * Gives back the windows' unused tokens and, with `take`, asks for this
   * replica's share of what is left: `ceil((limit − total) / replicas)`,
   * never past the limit. The tokens are given up before the statement is
   * sent (requests meanwhile wait for the grant), so none is used twice.
   */
  private grant(windows: Window[], take: boolean): Promise<void> {
    if (windows.length === 0) return Promise.resolve();
    // One grant at a time per window: requests that find it on its way wait for it (see `increment`).
    const done = this.grantNow(windows, take);
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    for (const w of windows) {
      w.granting = settled;
      void settled.then(() => {
        if (w.granting === settled) w.granting = undefined;
      });
    }
    return done;
  }

  private async grantNow(windows: Window[], take: boolean): Promise<void> {
    const released = windows.map((w) => w.tokens);
    for (const w of windows) w.tokens = 0;
    try {
      const cols = {
        keys: windows.map((w) => w.key),
        starts: windows.map((w) => w.start),
        expires: windows.map((w) => w.endsAt),
        limits: windows.map((w) => w.limit),
      };
      await this.ds.query(
        `INSERT INTO rate_windows (key, window_start, hits, expires_at)
           SELECT k, s, 0, to_timestamp(e / 1000.0) FROM unnest($1::varchar[], $2::bigint[], $3::bigint[]) AS u(k, s, e)
         ON CONFLICT (key, window_start) DO NOTHING`,
        [cols.keys, cols.starts, cols.expires],
      );
      type Row = { key: string; window_start: string; hits: number; last_grant: number };
      // Every SET expression reads the row as it was (the latest committed one, locked): `last_grant` is this grant.
      const raw: Row[] | [Row[], number] = await this.ds.query(
        `UPDATE rate_windows w SET
           hits = (w.hits - u.rel) + CASE WHEN $6 THEN ceil(greatest(u.lim - (w.hits - u.rel), 0)::numeric / $5)::int ELSE 0 END,
           last_grant = CASE WHEN $6 THEN ceil(greatest(u.lim - (w.hits - u.rel), 0)::numeric / $5)::int ELSE 0 END
         FROM unnest($1::varchar[], $2::bigint[], $3::int[], $4::int[]) AS u(k, s, rel, lim)
         WHERE w.key = u.k AND w.window_start = u.s
         RETURNING w.key, w.window_start, w.hits, w.last_grant`,
        [cols.keys, cols.starts, released, cols.limits, this.replicas, take],
      );
      const rows = (Array.isArray(raw[0]) ? raw[0] : raw) as Row[];
      const byId = new Map(rows.map((r) => [`${r.key}|${r.window_start}`, r]));
      for (const w of windows) {
        const r = byId.get(`${w.key}|${w.start}`);
        if (!r) continue;
        w.tokens += r.last_grant;
        w.total = Number(r.hits);
        w.full = take && r.last_grant === 0;
      }
      for (const w of windows) w.grantOk = true;
    } catch (err) {
      // Whether the statement committed is unknown: the tokens are not used (an undercount is the safe side).
      for (const w of windows) {
        w.full = false;
        w.grantOk = false;
      }
      throw err;
    }
  }

  /** How many replicas share the windows: their notice connections (none with the embedded database). */
  private async countReplicas(): Promise<void> {
    if (this.config.usesEmbeddedDatabase) return;
    try {
      const rows: { n: number }[] = await this.ds.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND starts_with(application_name, $1)`,
        [NOTICE_CONNECTION_PREFIX],
      );
      this.replicas = Math.max(1, rows[0]?.n ?? 1);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not count the replicas sharing rate limits');
    }
  }
}
