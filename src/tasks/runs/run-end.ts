import { Injectable, Logger } from '@nestjs/common';
import { isoTime } from '../../common/iso-time.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { safeError } from '../../common/safe-error.js';
import { EventLog } from '../event-log/event-log.service.js';
import { TaskLogWriter } from '../repositories/task-log.writer.js';
import type { EndCandidate, EndScope, StatusPayload, TaskRowChange } from '../repositories/task-log.types.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import { foldArtifacts, foldWithin, type StoredTaskEvent, type TaskEventBody } from '../task-events.js';
import { MAX_STORABLE_OUTPUT } from '../../config/settings/content-limits.settings.js';
import { toSnapshot } from '../task-snapshot.js';
import type { HeldRun } from './run-registry.js';
import type { RunWriter } from './run-writer.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { InstanceIdentity } from '../../database/instance-identity.js';

/** How a run ends: answered, asking, failed, or canceled (by a client, the operator, a shutdown). */
export type RunEnding =
  | { state: 'TASK_STATE_COMPLETED'; message?: MessageJson }
  | { state: 'TASK_STATE_INPUT_REQUIRED'; message: MessageJson }
  | { state: 'TASK_STATE_FAILED'; error: string; message?: MessageJson; metadata?: Record<string, unknown> }
  | { state: 'TASK_STATE_CANCELED'; error: string };

/** The endings that are final; a task in one never changes again. */
export type TerminalEnding = Extract<RunEnding, { state: 'TASK_STATE_FAILED' | 'TASK_STATE_CANCELED' }>;

const isTerminalEnding = (e: RunEnding): e is TerminalEnding =>
  e.state === 'TASK_STATE_FAILED' || e.state === 'TASK_STATE_CANCELED';

/** The status event an ending writes. */
export function endingStatus(e: RunEnding, timestamp = isoTime()): StatusPayload {
  switch (e.state) {
    case 'TASK_STATE_COMPLETED':
    case 'TASK_STATE_INPUT_REQUIRED':
      // A remote-backed agent's upstream may complete without a message: the status then has none.
      return e.message ? { state: e.state, message: e.message, timestamp } : { state: e.state, timestamp };
    case 'TASK_STATE_FAILED':
      return e.message
        ? { state: e.state, message: e.message, error: e.error, timestamp }
        : { state: e.state, error: e.error, timestamp };
    case 'TASK_STATE_CANCELED':
      return { state: e.state, error: e.error, timestamp };
    default: {
      const unreachable: never = e;
      return unreachable;
    }
  }
}

/** The row fields an ending sets (besides the status event). */
function endingChange(e: RunEnding): TaskRowChange {
  const change: TaskRowChange = { state: e.state, lease: null };
  if ('message' in e && e.message) {
    change.statusMessage = e.message;
    if (e.state !== 'TASK_STATE_FAILED') change.historyAppend = [e.message];
  }
  if ('error' in e) change.errorMessage = e.error;
  if ('metadata' in e && e.metadata) change.metadata = e.metadata;
  return change;
}

/** What a run knows when it ends itself: the closing events of its turn, its artifacts and tokens. */
export interface RunState {
  closing?: TaskEventBody[];
  artifacts: ArtifactJson[];
  tokens: { input: number; output: number };
  /** For a settling ending: the newest message seq the run has taken. */
  inputsUpTo?: number;
}

const BATCH = 500;

/**
 * The one terminal writer. A run ends itself through its writer (in order
 * after its last chunks, with the artifacts it folded in memory); everything
 * else — a cancel, the operator, a disabled tenant, the lease sweep, and a
 * run whose own end could not be stored — ends tasks from outside with
 * `endTasks`: the artifacts folded from the log, in batches, each task
 * exactly once (the write is conditional on the task not being terminal).
 * An end the database could not take is retried until it can: no task stays
 * non-terminal because its run died with the database away.
 */
@Injectable()
export class RunEnd {
  private readonly logger = new Logger('RunEnd');
  /** Runs whose end could not be written yet (the database was away), by task id. */
  private readonly unrecorded = new Map<
    string,
    { tenantId: string; ending: TerminalEnding; awaitsDatabase: boolean }
  >();
  /** This replica: a run's end retried from outside is written only while the task is still leased here. */
  private readonly self: string;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = 250;

  constructor(
    private readonly writer: TaskLogWriter,
    private readonly log: EventLog,
    private readonly metrics: Metrics,
    identity: InstanceIdentity,
  ) {
    this.self = identity.id;
  }

  /**
   * Tasks whose run ended here with an end that waits for the database to be written (it is retried): not strays
   * for the sweep to end "owner lost". An end that failed for another reason is left to the sweep as well.
   */
  get unrecordedTaskIds(): string[] {
    return [...this.unrecorded].filter(([, u]) => u.awaitsDatabase).map(([taskId]) => taskId);
  }

  /**
   * Ends a run from inside it. A settling ending (completed, input-required)
   * is `refused` when the task has a message the run has not taken, or ended
   * meanwhile; its errors propagate. A terminal ending never throws: if it
   * cannot be stored now, it is retried from outside until it is.
   */
  fromRun(run: HeldRun, writer: RunWriter, ending: RunEnding, known: RunState): Promise<'ended' | 'refused'> {
    const closing = known.closing ?? [];
    const change = endingChange(ending);
    change.artifacts = foldArtifacts(known.artifacts, closing);
    change.tokens = { input: known.tokens.input, output: known.tokens.output };
    if (known.inputsUpTo !== undefined) change.inputsUpTo = known.inputsUpTo;
    const events: TaskEventBody[] = [...closing, { kind: 'status', payload: endingStatus(ending) }];
    run.closing = true;
    // A reaction on the write (not an async function awaiting it): a frame and an await fewer per run.
    return writer.write(events, change).then(
      (stored) => {
        if (!stored) run.closing = false;
        else if (stored.row) run.settle(toSnapshot(stored.row));
        return stored ? 'ended' : 'refused';
      },
      (err: unknown) => {
        run.closing = false;
        if (!isTerminalEnding(ending)) throw err;
        this.logger.warn({ err: safeError(err), taskId: run.taskId }, 'could not record the end of a run; retrying');
        this.unrecorded.set(run.taskId, {
          tenantId: run.tenantId,
          ending,
          awaitsDatabase: isDatabaseUnavailable(err),
        });
        this.scheduleRetry();
        return 'ended' as const;
      },
    );
  }

  /**
   * Ends every unfinished task in `scope` with `ending`, from outside its
   * run (a run held anywhere hears of it and stops). Batch by batch, each in
   * one transaction (`TaskLogWriter.endBatch`): lock the tasks, fold their
   * artifacts from the log, write the ends — so nothing a run appends can
   * slip between the fold and the end. Returns the status events written:
   * one per task this call ended.
   */
  async endTasks(scope: EndScope, ending: TerminalEnding): Promise<StoredTaskEvent[]> {
    const status = endingStatus(ending);
    const ended: StoredTaskEvent[] = [];
    for (let pass = 0; ; pass++) {
      for (;;) {
        const batch = await this.writer.endBatch(scope, status, BATCH, (task, events) => this.fold(task, events));
        // Committed: tell this process's watchers (other replicas hear the NOTIFY).
        for (const e of batch.ended) this.log.publish(e.taskId, [e]);
        ended.push(...batch.ended);
        if (batch.locked < BATCH || batch.ended.length === 0) break;
      }
      // A tenant's tasks being written at that moment were skipped: end them too (the sweep comes back anyway).
      if (scope.kind !== 'tenant' || pass >= 250 || !(await this.writer.anyLeft(scope))) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (ended.length) this.metrics.tasksEnded.inc({ state: ending.state, agent: '*' }, ended.length);
    return ended;
  }

  /**
   * A task's artifacts with its artifact events folded in. A malformed log keeps the row's artifacts, and so does
   * one whose fold could not be stored (written before its content was bounded): the task still ends.
   */
  private fold(task: EndCandidate, events: StoredTaskEvent[]): ArtifactJson[] {
    try {
      const folded = foldWithin(task.artifacts, events, MAX_STORABLE_OUTPUT);
      if (folded) return folded;
      this.logger.error(
        { taskId: task.taskId },
        'a task’s artifacts are too large to store; it ends with those it had',
      );
      return task.artifacts;
    } catch (err) {
      this.logger.error({ err: safeError(err), taskId: task.taskId }, 'could not fold a task’s artifacts');
      return task.artifacts;
    }
  }

  /** One retry loop at a time; it re-arms itself (with backoff up to 5 s) only after a pass has finished. */
  private scheduleRetry(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      void (async () => {
        for (const [taskId, u] of [...this.unrecorded]) {
          try {
            // Not if another replica took the task over meanwhile (a remote-backed task's follower): it is its run now.
            await this.endTasks({ kind: 'task', tenantId: u.tenantId, taskId, owner: this.self }, u.ending);
            this.unrecorded.delete(taskId);
          } catch (err) {
            u.awaitsDatabase = isDatabaseUnavailable(err);
            this.logger.warn({ err: safeError(err), taskId }, 'could not record the end of a run; retrying');
          }
        }
        this.retryTimer = undefined;
        this.retryMs = this.unrecorded.size > 0 ? Math.min(this.retryMs * 2, 5_000) : 250;
        if (this.unrecorded.size > 0) this.scheduleRetry();
      })();
    }, this.retryMs);
    this.retryTimer.unref();
  }
}
