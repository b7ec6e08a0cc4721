import { Injectable, Logger } from '@nestjs/common';
import { AsyncQueue } from '../../common/async-queue.js';
import { Latch } from '../../common/latch.js';
import { RunAbort } from '../../common/run-abort.js';
import { safeError } from '../../common/safe-error.js';
import type { RunInput } from '../../orchestrator/run-event.js';
import { EventBus } from '../event-log/event-bus.js';
import { EventReads } from '../repositories/event-reads.repository.js';
import type { TaskSnapshot } from '../task-snapshot.js';
import type { StoredTaskEvent } from '../task-events.js';
import { isTerminal } from '../task-state.js';
import { runInputOf } from './run-event-mapper.js';

/** Why a run was aborted; becomes the task's error text when the run records its own end. */
export class CancelReason extends Error {
  constructor(message = 'canceled by client') {
    super(message);
    this.name = 'CancelReason';
  }
}

/**
 * Why a run was given up before its task was stored (its creation failed, or
 * its outcome is unknown): the run stops and writes nothing — not even an end,
 * since as far as it knows there is no task (one that committed after all is
 * ended by the lease sweep).
 */
export class RunAbandoned extends Error {
  constructor(message = 'the task could not be stored') {
    super(message);
    this.name = 'RunAbandoned';
  }
}

/** A message for the running turn, with its place in the task's log. */
export type QueuedInput = RunInput & { seq: number };

/** A run this process holds. */
export class HeldRun {
  readonly abort = new RunAbort();
  /** User messages for the run, in log order; the turn takes them from here. */
  readonly inbox = new AsyncQueue<QueuedInput>();
  private readonly finishing = new Latch();
  private readonly settling = new Latch<TaskSnapshot | null>();
  private readonly answering = new Latch();
  /** What `settled` resolved with, once it has (undefined before). */
  settledTask: TaskSnapshot | null | undefined;
  /** Set while the run writes its own end, so the terminal status it then sees is not taken for an end elsewhere. */
  closing = false;
  /** Every event of the log up to this seq has been looked at for input and ends. */
  cursor: number;
  /** The newest message seq put into the inbox. */
  delivered: number;
  unsubscribe: () => void = () => undefined;
  reading: Promise<void> | undefined;
  /** The newest seq another writer told us of (a notice, or a gap in what we were handed). */
  pokedTo = 0;
  /** Re-reads asked for without a seq (a gap of unknown size), and how many of them a read has served. */
  rereadsAsked = 0;
  rereadsServed = 0;

  constructor(
    readonly tenantId: string,
    readonly taskId: string,
    first: QueuedInput,
    cursor: number,
  ) {
    this.inbox.push(first);
    this.cursor = cursor;
    this.delivered = first.seq;
  }

  /** Resolves when the run has written its last event and let go. */
  get finished(): Promise<void> {
    return this.finishing.wait();
  }

  done(): void {
    this.finishing.open();
  }

  /**
   * The task as the run's first settling write committed it (answered,
   * asking, failed, canceled), from that write's own result: a blocking send
   * needs no read-back. Null when the run let go without settling it itself.
   */
  get settled(): Promise<TaskSnapshot | null> {
    return this.settling.wait();
  }

  settle(task: TaskSnapshot | null): void {
    this.settledTask ??= task;
    this.settling.open(task);
  }

  /**
   * Resolves when the run's agent has said something that is not its turn's end (a remote-backed agent: its
   * upstream's first event): a stream that waits for it before its first frame can still answer a refusal.
   */
  get answered(): Promise<void> {
    return this.answering.wait();
  }

  answer(): void {
    this.answering.open();
  }
}

/**
 * The runs this process holds, by task id, and what reaches them from the
 * log. Each run watches its task: a user message written anywhere (here, or
 * on another replica, announced by a notice) goes to its inbox, so a
 * continuation reaches the running turn wherever it was sent; a terminal
 * status written elsewhere (a cancel, a sweep, the operator) aborts it, so no
 * run outlives its task.
 */
@Injectable()
export class RunRegistry {
  private readonly logger = new Logger('RunRegistry');
  private readonly runs = new Map<string, HeldRun>();
  /** Runs held here per tenant (the tenant's share of this replica, for its running-task cap). */
  private readonly perTenant = new Map<string, number>();

  constructor(
    private readonly bus: EventBus,
    private readonly events: EventReads,
  ) {}

  /** Registers a run and starts watching its task's log after `cursor`. */
  hold(tenantId: string, taskId: string, first: QueuedInput, cursor: number): HeldRun {
    const run = new HeldRun(tenantId, taskId, first, cursor);
    const replaced = this.runs.get(taskId);
    this.runs.set(taskId, run);
    if (!replaced) this.perTenant.set(tenantId, (this.perTenant.get(tenantId) ?? 0) + 1);
    run.unsubscribe = this.bus.subscribe(taskId, (events, poked) => this.onEvents(run, events, poked));
    return run;
  }

  /** The run let go: stop watching, close its inbox, wake whoever waits for it. */
  release(run: HeldRun): void {
    run.unsubscribe();
    run.inbox.close();
    if (this.runs.get(run.taskId) === run) {
      this.runs.delete(run.taskId);
      const n = (this.perTenant.get(run.tenantId) ?? 1) - 1;
      if (n > 0) this.perTenant.set(run.tenantId, n);
      else this.perTenant.delete(run.tenantId);
    }
    run.settle(null);
    run.done();
  }

  get(taskId: string): HeldRun | undefined {
    return this.runs.get(taskId);
  }

  all(): HeldRun[] {
    return [...this.runs.values()];
  }

  /** How many runs this replica holds for each tenant that has any. */
  countsByTenant(): ReadonlyMap<string, number> {
    return this.perTenant;
  }

  get size(): number {
    return this.runs.size;
  }

  /**
   * Reads the log after the run's cursor for what it must act on (messages,
   * an end written elsewhere): up to `upto` (a seq we were told of), or all
   * of it. One read at a time per run; what is asked during a read is served
   * by another read after it. Rejects when the log cannot be read.
   */
  catchUp(run: HeldRun, upto?: number): Promise<void> {
    if (upto === undefined || upto >= Number.MAX_SAFE_INTEGER) run.rereadsAsked++;
    else run.pokedTo = Math.max(run.pokedTo, upto);
    run.reading ??= this.read(run).finally(() => (run.reading = undefined));
    return run.reading;
  }

  /** `catchUp` for callers that do not wait: a failed read is logged, and the next notice or renewal reads again. */
  nudge(run: HeldRun, upto?: number): void {
    this.catchUp(run, upto).catch((err: unknown) =>
      this.logger.warn({ err: safeError(err), taskId: run.taskId }, 'could not read a held task’s log'),
    );
  }

  private async read(run: HeldRun): Promise<void> {
    while (!run.inbox.isClosed && (run.pokedTo > run.cursor || run.rereadsAsked > run.rereadsServed)) {
      const target = run.pokedTo;
      const asked = run.rereadsAsked;
      this.take(run, await this.events.controlEvents(run.tenantId, run.taskId, run.cursor));
      // Everything up to the seq we were told of was committed before we read, so the read covered it.
      run.cursor = Math.max(run.cursor, target);
      run.rereadsServed = asked;
    }
  }

  private onEvents(run: HeldRun, events: StoredTaskEvent[], poked?: number): void {
    if (poked !== undefined) {
      if (poked > run.cursor) this.nudge(run, poked);
      return;
    }
    const first = events[0];
    // Events committed in between that we were not handed (another replica's, or an out-of-order publish here).
    if (first && first.seq > run.cursor + 1) {
      this.nudge(run, events[events.length - 1]?.seq ?? first.seq);
      return;
    }
    this.take(run, events);
  }

  private take(run: HeldRun, events: StoredTaskEvent[]): void {
    for (const e of events) {
      if (e.seq <= run.cursor) continue;
      run.cursor = e.seq;
      if (e.kind === 'message' && e.seq > run.delivered) {
        run.delivered = e.seq;
        run.inbox.push(runInputOf(e.payload.message, e.seq));
      } else if (e.kind === 'status' && isTerminal(e.payload.state) && !run.closing && !run.abort.aborted) {
        run.abort.abort(new CancelReason(e.payload.error || 'the task ended elsewhere'));
      }
    }
  }
}
