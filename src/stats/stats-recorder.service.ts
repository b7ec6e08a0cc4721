import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { safeError } from '../common/safe-error.js';
import { slotOf } from './histogram.js';
import { FLUSH_STATS, PRUNE_STATS } from './stats.sql.js';

/** How often a replica adds what it counted to the tables. */
export const FLUSH_MS = 2_000;
const PRUNE_MS = 3_600_000;
/** Most (tenant, minute) cells held while the database does not answer; later counts are dropped. */
const MAX_CELLS = 50_000;

export type Outcome = 'completed' | 'failed' | 'canceled' | 'input_required';
export type LatencyKind = 'first_event' | 'duration';

interface Cell {
  tenantId: string;
  minute: number;
  started: number;
  completed: number;
  failed: number;
  canceled: number;
  input_required: number;
  /** `kind:slot` → runs. */
  latency: Map<string, number>;
  /** `binding\ncode` → errors. */
  errors: Map<string, number>;
}

const OUTCOME: Record<string, Outcome | undefined> = {
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_REJECTED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input_required',
  TASK_STATE_AUTH_REQUIRED: 'input_required',
};

/**
 * Counts what the overview charts — tasks started and their outcomes, run
 * times, A2A errors — per tenant and minute in this replica's memory, and
 * adds the counts to `stats_tasks`, `stats_latency` and `stats_a2a_errors`
 * (minute and hour rows) every `FLUSH_MS` in one statement of
 * `INSERT … ON CONFLICT DO UPDATE`s: every replica's counts end up in the
 * same rows, and the request path only touches a Map. Counts not yet
 * written when the database fails are kept for the next flush (up to
 * `MAX_CELLS`); rows past their retention are pruned hourly.
 */
@Injectable()
export class StatsRecorder implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Stats');
  private pending = new Map<string, Cell>();
  private flushing: Promise<void> | undefined;
  /** The cell `cell()` found last, and the pending map it is in (a flush starts another). */
  private last: { cell: Cell; in: Map<string, Cell> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pruner: NodeJS.Timeout | undefined;

  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
    this.pruner = setInterval(() => void this.prune(), PRUNE_MS);
    this.pruner.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.pruner);
    await this.flush();
  }

  taskStarted(tenantId: string, n = 1): void {
    const c = this.cell(tenantId);
    if (c) c.started += n;
  }

  /** A task reached `state` (a terminal or interrupted one; others are not counted). */
  taskSettled(tenantId: string, state: string, n = 1): void {
    const outcome = OUTCOME[state];
    const c = outcome && this.cell(tenantId);
    if (c) c[outcome] += n;
  }

  latency(tenantId: string, kind: LatencyKind, seconds: number): void {
    const c = this.cell(tenantId);
    if (!c) return;
    const key = `${kind}:${slotOf(seconds)}`;
    c.latency.set(key, (c.latency.get(key) ?? 0) + 1);
  }

  /** An A2A call answered with an error `code` on `binding` (jsonrpc, rest, grpc). */
  a2aError(tenantId: string, binding: string, code: string): void {
    const c = this.cell(tenantId);
    if (!c || !code) return;
    const key = `${binding}\n${code.slice(0, 64)}`;
    c.errors.set(key, (c.errors.get(key) ?? 0) + 1);
  }

  /** Writes what was counted so far (one flush at a time; a second caller waits for the one running). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const cells = this.pending;
    this.pending = new Map();
    this.flushing = this.write(cells).finally(() => (this.flushing = undefined));
    await this.flushing;
  }

  /** Deletes minute rows older than 8 days and hour rows older than 40 days. */
  async prune(): Promise<void> {
    try {
      for (const sql of PRUNE_STATS) await this.ds.query(sql);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not prune old statistics');
    }
  }

  private async write(cells: Map<string, Cell>): Promise<void> {
    const tasks: unknown[] = [];
    const latency: unknown[] = [];
    const errors: unknown[] = [];
    for (const c of cells.values()) {
      const bucket = new Date(c.minute).toISOString();
      const t = c.tenantId;
      if (c.started + c.completed + c.failed + c.canceled + c.input_required > 0) {
        const { started, completed, failed, canceled, input_required } = c;
        tasks.push({ tenant_id: t, bucket, started, completed, failed, canceled, input_required });
      }
      for (const [key, n] of c.latency) {
        const [kind, slot] = key.split(':');
        latency.push({ tenant_id: t, bucket, kind, slot: Number(slot), n });
      }
      for (const [key, n] of c.errors) {
        const [binding, code] = key.split('\n');
        errors.push({ tenant_id: t, bucket, binding, code, n });
      }
    }
    try {
      await this.ds.query(FLUSH_STATS, [JSON.stringify(tasks), JSON.stringify(latency), JSON.stringify(errors)]);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not write statistics; keeping them for the next flush');
      for (const [key, c] of cells) this.merge(key, c);
    }
  }

  private merge(key: string, c: Cell): void {
    const into = this.pending.get(key);
    if (!into) {
      if (this.pending.size < MAX_CELLS) this.pending.set(key, c);
      return;
    }
    into.started += c.started;
    into.completed += c.completed;
    into.failed += c.failed;
    into.canceled += c.canceled;
    into.input_required += c.input_required;
    for (const [k, n] of c.latency) into.latency.set(k, (into.latency.get(k) ?? 0) + n);
    for (const [k, n] of c.errors) into.errors.set(k, (into.errors.get(k) ?? 0) + n);
  }

  private cell(tenantId: string): Cell | undefined {
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    // A request counts several things for one tenant in one minute: the cell it found last, without a key made.
    const last = this.last;
    if (last && last.in === this.pending && last.cell.tenantId === tenantId && last.cell.minute === minute) {
      return last.cell;
    }
    const key = `${tenantId}|${minute}`;
    let c = this.pending.get(key);
    if (!c) {
      if (this.pending.size >= MAX_CELLS) return undefined;
      c = {
        tenantId,
        minute,
        started: 0,
        completed: 0,
        failed: 0,
        canceled: 0,
        input_required: 0,
        latency: new Map(),
        errors: new Map(),
      };
      this.pending.set(key, c);
    }
    this.last = { cell: c, in: this.pending };
    return c;
  }
}
