import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { AppConfig } from '../config/app-config.js';
import { InstanceIdentity, NOTICE_CONNECTION_PREFIX } from './instance-identity.js';
import { safeError } from '../common/safe-error.js';

/** Runs for each notice; a handler whose change takes a read returns its promise (see `listenApplied`). */
type NoticeHandler = (payload: string) => void | Promise<unknown>;

/** Where replicas confirm that they applied a change notice (see `appliedEverywhere`). */
const ACK_CHANNEL = 'arbiter_ack';
const digest = (channel: string, payload: string): string =>
  createHash('sha256').update(`${channel}\u0000${payload}`).digest('base64url').slice(0, 22);

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
  /** Channels whose notices each replica confirms once its handlers ran. */
  private readonly acked = new Set<string>();
  private readonly acks = new Map<string, { from: Set<string>; expected: number; done: () => void }>();
  private readonly instance = randomBytes(6).toString('hex');
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 100;
  /** A connection was lost or could not be made since the last one: notices may have been missed. */
  private missed = false;
  private timer: NodeJS.Timeout | undefined;
  /** True while the LISTEN connection is up; readiness reports it. */
  connected = false;

  constructor(
    private readonly config: AppConfig,
    private readonly identity: InstanceIdentity,
  ) {}

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
   * Like `listen`, and each replica confirms every notice on `channel` after
   * its handlers ran — so `appliedEverywhere` can wait for all of them. A
   * handler that returns a promise (it re-reads what changed) is confirmed
   * when that promise settles, not before: until then the replica may still
   * serve the old state.
   */
  listenApplied(channel: string, handler: NoticeHandler): void {
    this.acked.add(channel);
    this.listen(channel, handler);
    if (!this.handlers.has(ACK_CHANNEL)) this.listen(ACK_CHANNEL, (p) => this.onAck(p));
  }

  /**
   * Resolves once every replica listening now (this one included) has
   * applied `payload` on `channel` — a change sent in a transaction that is
   * about to commit — or after `timeoutMs`. Hearing one's own notice back is
   * not enough: PostgreSQL queues a notice for every listening session at
   * commit, but another replica may read it from its socket a moment later
   * than a request sent to it right after this one answered. A replica that
   * does not confirm in time has lost its notice connection — it serves
   * nothing from its caches until that connection is back, and then starts
   * them empty — or is stalled (its event loop blocked): it applies the
   * change when it reads the notice, and may serve the old state until then.
   */
  appliedEverywhere(channel: string, payload: string, timeoutMs = 2_000): { done: Promise<void> } {
    if (!this.enabled || !this.connected || !this.client) return { done: Promise.resolve() };
    const key = digest(channel, payload);
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const timer = setTimeout(() => entry.done(), timeoutMs);
    timer.unref();
    const entry = {
      from: new Set<string>(),
      expected: Number.POSITIVE_INFINITY,
      done: () => {
        clearTimeout(timer);
        if (this.acks.get(key) === entry) this.acks.delete(key);
        finish();
      },
    };
    this.acks.set(key, entry);
    // How many replicas listen (counted before the change commits: one that starts later reads fresh anyway).
    this.client
      .query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND starts_with(application_name, $1)`,
        [NOTICE_CONNECTION_PREFIX],
      )
      .then(
        (r) => {
          entry.expected = Math.max(1, r.rows[0]?.n ?? 1);
          if (entry.from.size >= entry.expected) entry.done();
        },
        () => entry.done(),
      );
    return { done };
  }

  /**
   * Runs one statement on this replica's own connection — not the pool, so
   * that work that must not wait behind requests (lease renewals) never
   * queues for a pooled connection. A statement that has not answered within
   * `timeoutMs` fails, and the connection is replaced: a silent socket must
   * not hold the replica's renewals. Throws when the connection is down.
   */
  async run<R extends pg.QueryResultRow>(text: string, values: unknown[], timeoutMs: number): Promise<R[]> {
    const client = this.client;
    if (!client) throw new Error('the notice connection is down');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`no answer on the notice connection within ${timeoutMs} ms`));
        this.lost(client);
        client.end().catch(() => undefined);
      }, timeoutMs);
      timer.unref();
    });
    try {
      const result = await Promise.race([client.query<R>(text, values), timeout]);
      return result.rows;
    } finally {
      clearTimeout(timer);
    }
  }

  private onAck(payload: string): void {
    const [key, from] = payload.split('|');
    const entry = key ? this.acks.get(key) : undefined;
    if (!entry || !from) return;
    entry.from.add(from);
    if (entry.from.size >= entry.expected) entry.done();
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
      // Other replicas see this replica alive by this connection (see `LeaseService`).
      application_name: this.identity.connectionName,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5_000,
    });
    client.on('notification', (n) => {
      const payload = n.payload ?? '';
      let pending: Promise<unknown>[] | undefined;
      for (const h of this.handlers.get(n.channel) ?? []) {
        const applying = h(payload);
        if (applying) (pending ??= []).push(applying);
      }
      if (!this.acked.has(n.channel)) return;
      const ack = (): void => {
        client
          .query(`SELECT pg_notify($1, $2)`, [ACK_CHANNEL, `${digest(n.channel, payload)}|${this.instance}`])
          .catch(() => undefined);
      };
      if (pending) void Promise.allSettled(pending).then(ack);
      else ack();
    });
    client.on('error', (err) => {
      this.logger.warn({ err: safeError(err) }, 'notice connection failed');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      // The server drops this session within about 11 s of this process's host going silent (a crash, a cut
      // cable), rather than the operating system's two hours: other replicas judge this one alive by it.
      await client.query(`SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3`);
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
    // At most a second between attempts: after an outage, other replicas wait a lease for this one to be back.
    this.retryMs = Math.min(this.retryMs * 2, 1_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }
}
