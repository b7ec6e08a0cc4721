import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import pg from 'pg';
import { AppConfig } from '../../config/app-config.js';
import { safeError } from '../../common/safe-error.js';
import { TASK_EVENTS_CHANNEL, TaskRepository } from '../repositories/task.repository.js';
import { isTerminal } from '../task-state.js';
import { TaskEventBus } from './event-bus.service.js';
import { InFlightRegistry } from './in-flight.registry.js';
import { InstanceIdentity } from './instance-identity.js';
import { CancelReason } from './task-runner.service.js';

/**
 * Cross-replica delivery over PostgreSQL LISTEN/NOTIFY. Every event write
 * sends a small notice on commit (`<instance>|<task>|<seq>`, see
 * `TaskRepository.append`); this service holds one dedicated connection
 * listening for them and
 *  - pokes local subscribers of that task, who read the events from the log
 *    (a lost or truncated notice cannot lose an event: the log is the truth);
 *  - stops a run held here when another replica ended its task (a cancel
 *    arriving at another replica, a sweep), so the run stops at once instead
 *    of at its next write.
 * The connection reconnects by itself (backoff up to 5 s) and every
 * subscriber re-reads the log after a gap. Not used with the embedded
 * database, which has one process.
 */
@Injectable()
export class ChangeListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ChangeListener');
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 100;
  private everConnected = false;
  private timer: NodeJS.Timeout | undefined;
  /** True while the LISTEN connection is up (readiness reports it). */
  connected = false;

  constructor(
    private readonly config: AppConfig,
    private readonly bus: TaskEventBus,
    private readonly inflight: InFlightRegistry,
    private readonly repo: TaskRepository,
    private readonly identity: InstanceIdentity,
  ) {}

  get enabled(): boolean {
    return !this.config.usesEmbeddedDatabase;
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
    client.on('notification', (n) => this.onNotice(n.payload ?? ''));
    client.on('error', (err) => {
      this.logger.warn({ err: safeError(err) }, 'change listener connection failed');
      this.lost(client);
    });
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${TASK_EVENTS_CHANNEL}`);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'change listener cannot connect; retrying');
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
    if (this.everConnected) this.logger.log('change listener reconnected; subscribers re-read the log');
    this.everConnected = true;
    // Whatever was committed while no one listened: every subscriber catches up from the log.
    this.bus.pokeAll();
  }

  private lost(client: pg.Client): void {
    if (client !== this.client && this.client !== undefined) return;
    this.client = undefined;
    this.connected = false;
    if (this.stopped || this.timer) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 5_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  private onNotice(payload: string): void {
    const [instance, taskId, seqText] = payload.split('|');
    if (!instance || !taskId || !seqText || instance === this.identity.id) return;
    const seq = Number(seqText);
    if (!Number.isSafeInteger(seq)) return;
    this.bus.poke(taskId, seq);
    const run = this.inflight.get(taskId);
    if (run && !run.abort.signal.aborted) void this.stopIfEnded(taskId, run.abort);
  }

  /** Another replica wrote to a task whose run is here: if it ended the task, stop the run now. */
  private async stopIfEnded(taskId: string, abort: AbortController): Promise<void> {
    try {
      const row = await this.repo.stateOf(taskId);
      if (row && isTerminal(row.state)) abort.abort(new CancelReason(row.errorMessage || 'canceled by client'));
    } catch (err) {
      this.logger.warn({ err: safeError(err), taskId }, 'could not check a task ended elsewhere');
    }
  }
}
