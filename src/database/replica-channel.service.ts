import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import pg from 'pg';
import { AppConfig } from '../config/app-config.js';
import { safeError } from '../common/safe-error.js';

type NoticeHandler = (payload: string) => void;

/**
 * The one LISTEN connection a replica holds to PostgreSQL, shared by every
 * module that needs to hear what other replicas commit (task events, access
 * revocations). Notices are sent with `pg_notify` inside the writing
 * statement or transaction, so they arrive only for committed work. The
 * connection reconnects by itself (backoff up to 2 s); after a reconnect the
 * `onReconnect` handlers run, because notices sent meanwhile are gone.
 * With the embedded database there is one process and no connection.
 */
@Injectable()
export class ReplicaChannel implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReplicaChannel');
  private readonly handlers = new Map<string, Set<NoticeHandler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private readonly echoes = new Set<{ channel: string; payload: string; heard: () => void }>();
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 100;
  /** A connection was lost or could not be made since the last one: notices may have been missed. */
  private missed = false;
  private timer: NodeJS.Timeout | undefined;
  /** True while the LISTEN connection is up; readiness reports it. */
  connected = false;

  constructor(private readonly config: AppConfig) {}

  /** False with the embedded database (one process: nothing to hear). */
  get enabled(): boolean {
    return !this.config.usesEmbeddedDatabase;
  }

  /** Calls `handler` with the payload of every notice on `channel` (a fixed identifier). */
  listen(channel: string, handler: NoticeHandler): void {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      if (this.client) void this.client.query(`LISTEN ${channel}`).catch(() => undefined);
    }
    set.add(handler);
  }

  /**
   * Resolves once this replica's own connection has heard `payload` on
   * `channel` (a notice sent in a transaction that just committed), or after
   * `timeoutMs`. PostgreSQL hands a notice to every listening session at
   * commit, so when it is back here the other replicas have it too: a change
   * announced this way is in force everywhere before the caller answers.
   */
  heard(channel: string, payload: string, timeoutMs = 2_000): { done: Promise<void> } {
    if (!this.enabled || !this.connected) return { done: Promise.resolve() };
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const timer = setTimeout(() => w.heard(), timeoutMs);
    timer.unref();
    const w = {
      channel,
      payload,
      heard: () => {
        clearTimeout(timer);
        this.echoes.delete(w);
        finish();
      },
    };
    this.echoes.add(w);
    return { done };
  }

  /** Runs after the connection came back: whatever was sent meanwhile must be read from the database. */
  onReconnect(handler: () => void): void {
    this.reconnectHandlers.add(handler);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.enabled) return;
    await this.connect();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    this.connected = false;
    await c?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.config.databaseUrl,
      application_name: 'arbiter-listen',
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
    });
    client.on('notification', (n) => {
      for (const h of this.handlers.get(n.channel) ?? []) h(n.payload ?? '');
      for (const w of [...this.echoes]) if (w.channel === n.channel && w.payload === n.payload) w.heard();
    });
    client.on('error', (err) => {
      this.logger.warn({ err: safeError(err) }, 'notice connection failed');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'notice connection cannot connect; retrying');
      this.lost(client);
      await client.end().catch(() => undefined);
      return;
    }
    if (this.stopped) {
      // Shut down while connecting: this connection must not outlive the process's intent.
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.connected = true;
    this.retryMs = 100;
    if (this.missed) {
      this.logger.log('notice connection back; catching up from the database');
      for (const h of this.reconnectHandlers) h();
    }
    this.missed = false;
  }

  private lost(client: pg.Client): void {
    if (client !== this.client && this.client !== undefined) return;
    this.missed = true;
    this.client = undefined;
    this.connected = false;
    if (this.stopped || this.timer) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 2_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }
}
