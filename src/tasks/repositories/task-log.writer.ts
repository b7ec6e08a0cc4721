import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isoOf } from '../../common/iso-time.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import { isStatementRefused } from '../../common/db-errors.js';
import type { DomainError } from '../../common/errors.js';
import { GroupCommit } from '../../database/group-commit.js';
import { InstanceIdentity } from '../../database/instance-identity.js';
import { Params } from '../../database/sql-params.js';
import { Sql } from '../../database/sql.service.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { APPEND, appendRecord } from '../statements/append.sql.js';
import { CONTINUE } from '../statements/continue.sql.js';
import { createRecord, createStatement } from '../statements/create.sql.js';
import { anyLeftSql, endManySql, lockCandidatesSql } from '../statements/end.sql.js';
import { fileRow, pushRow, toStoredEvents, type EventRow } from '../statements/fragments.sql.js';
import { DELETE_ENDED_IN_CONTEXT, PURGE_ENDED } from '../statements/remove.sql.js';
import { callsOf } from '../statements/usage.sql.js';
import { StatsRecorder } from '../../stats/stats-recorder.service.js';
import { UsageMeter } from '../../usage/usage-meter.js';
import { runningCapReached } from '../task.errors.js';
import { stored, type StoredTaskEvent, type TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import type { TaskRow } from '../task-snapshot.js';
import { isSettled, type TaskStateName } from '../task-state.js';
import { EventReads } from './event-reads.repository.js';
import { fold, mergedAnswers, type CreateItem } from './merged-creation.js';
import type {
  Appended,
  Continued,
  EndCandidate,
  EndScope,
  Lease,
  NewPushConfig,
  NewTask,
  ResumedRow,
  StatusPayload,
  TaskRowChange,
} from './task-log.types.js';

interface AppendItem {
  taskId: string;
  events: TaskEventBody[];
  change: TaskRowChange;
}

/** Most file bytes (base64) one statement carries; heavier writes go in smaller batches, or alone. */
const MAX_BATCH_FILE_BYTES = 16 * 1024 * 1024;
/** Most writes in one statement; a batch waits for nothing but the statement before it. */
const MAX_BATCH = 64;
const IN_FLIGHT = 2;

const fileBytes = (files: readonly NewTaskFile[] | undefined): number =>
  (files ?? []).reduce((n, f) => n + f.b64.length, 0);

/**
 * The one writer of the task log: every statement that adds events — create,
 * append, continue, end from outside — or removes tasks goes through here,
 * and each is one statement that moves the task row along the state machine
 * (never back, a terminal state never again) with its events and stored
 * files, and sends the change notice on commit (`statements/notify.sql.ts`),
 * or writes nothing. The SQL texts are in `statements/`.
 *
 * Creations and appends go by group commit: the writes of concurrent runs in
 * the same tick go to PostgreSQL as one statement, and each caller gets its
 * part once it is committed. Writes of one task never share a batch and
 * commit in order. A task's run starts while its creation waits for its
 * statement (see `TaskIntake.create`): appends made in that time are merged
 * into the creation — one INSERT writes the row as the run left it, with
 * every event — and each is answered when that statement commits, as if it
 * had been its own. A run that finishes at once (an in-process model)
 * therefore costs one statement and no UPDATE. Appends made once the
 * statement was sent wait for it to commit and follow it.
 */
@Injectable()
export class TaskLogWriter {
  private readonly appends: GroupCommit<AppendItem, Appended | null>;
  private readonly creates: GroupCommit<CreateItem, StoredTaskEvent[] | DomainError>;
  /** Creations not committed yet, by task id. */
  private readonly pending = new Map<string, { item: CreateItem; committed: Promise<unknown> }>();
  /** Sizes of the batches sent, for the benchmark and the metrics. */
  readonly batches = { statements: 0, writes: 0 };

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly sql: Sql,
    private readonly identity: InstanceIdentity,
    private readonly metrics: Metrics,
    private readonly events: EventReads,
    private readonly meter: UsageMeter,
    private readonly stats: StatsRecorder,
  ) {
    const onBatch = (size: number): void => {
      this.batches.statements++;
      this.batches.writes += size;
      metrics.writeBatch.observe(size);
    };
    const options = {
      maxBatch: MAX_BATCH,
      maxInFlight: IN_FLIGHT,
      onBatch,
      maxBatchWeight: MAX_BATCH_FILE_BYTES,
      // A batch whose outcome is unknown (a timeout, a lost connection) is not retried: it may have committed.
      splittable: isStatementRefused,
    };
    this.appends = new GroupCommit((items) => this.appendMany(items), {
      ...options,
      keyOf: (i) => i.taskId,
      weightOf: (i) => fileBytes(i.change.files),
    });
    this.creates = new GroupCommit((items) => this.createMany(items), {
      ...options,
      keyOf: (i) => i.task.taskId,
      weightOf: (i) => fileBytes(i.files),
    });
  }

  /**
   * Inserts a task and its first events: the row in `state`, `last_seq` = the number of events, leased;
   * `files` (the message's stored files) go in the same statement. Rejects with the running-task cap's
   * refusal when the task would pass `task.runningCap`.
   */
  create(
    task: NewTask,
    first: TaskEventBody[],
    state: TaskStateName,
    lease: Lease,
    files: NewTaskFile[] = [],
  ): Promise<StoredTaskEvent[]> {
    const item: CreateItem = { task, first, state, lease, files, tail: [], sent: false };
    // Merged appends are answered by `createMany`; if the creation fails, they wrote nothing.
    const failed = (err: unknown): never => {
      this.pending.delete(task.taskId);
      for (const m of item.tail.splice(0)) m.resolve(null);
      throw err;
    };
    // A creation the running-task cap refused comes back as its error: the statement wrote the others.
    // (One reaction for both outcomes: the creation is no longer pending once it has settled either way.)
    const done = this.creates.submit(item).then((r) => {
      if (!Array.isArray(r)) return failed(r);
      this.pending.delete(task.taskId);
      return r;
    }, failed);
    this.pending.set(task.taskId, { item, committed: done });
    return done;
  }

  /**
   * Appends events and applies `change` atomically. Null when the task is
   * not in a state that allows it (terminal, or a transition the state
   * machine forbids) or `inputsUpTo` is stale: then nothing was written.
   */
  append(taskId: string, events: TaskEventBody[], change: TaskRowChange = {}): Promise<Appended | null> {
    if (events.length === 0 && !change.metadata) return Promise.resolve({ events: [] });
    const creating = this.pending.get(taskId);
    // Files are weighed when the creation is batched: an append that carries some follows it instead of joining it.
    if (creating && !creating.item.sent && !change.files?.length) {
      return new Promise((resolve) => creating.item.tail.push({ events, change, resolve }));
    }
    if (creating) {
      // The creation is on its way: follow it once it has committed (a task it failed to create takes nothing).
      return creating.committed.then(
        () => this.appends.submit({ taskId, events, change }),
        () => null,
      );
    }
    return this.appends.submit({ taskId, events, change });
  }

  /**
   * Adds a user message to a task that is not terminal, in one statement.
   * A running task keeps its run (wherever it is; the run takes the message
   * from the log). An interrupted task moves to `working` and is leased to
   * `lease.owner`, who must start its run: `started` says so, and `row` is
   * what that run starts from (history before this message, artifacts,
   * tokens), read under the row lock. Null when the task is terminal or
   * gone, or interrupted while its tenant is at `runningCap`: nothing was written.
   */
  async continueWith(
    tenantId: string,
    taskId: string,
    message: MessageJson,
    working: TaskEventBody,
    lease: Lease,
    files: NewTaskFile[] = [],
    runningCap = 0,
    countRequest = false,
    push: NewPushConfig | null = null,
  ): Promise<Continued | null> {
    const at = working.kind === 'status' ? working.payload.timestamp : null;
    const rows = await this.ds.query<(EventRow & { row: ResumedRow })[]>(CONTINUE, [
      taskId,
      tenantId,
      JSON.stringify([message]),
      at,
      JSON.stringify(working.payload),
      lease.owner,
      lease.ms,
      this.identity.id,
      JSON.stringify(message),
      JSON.stringify(files.map(fileRow)),
      runningCap,
      countRequest,
      push && JSON.stringify(pushRow(push)),
    ]);
    if (rows.length === 0) return null;
    const row = rows[0].row;
    // The history as it was before this message: what the model replays for a new turn.
    return {
      events: toStoredEvents(rows),
      started: rows.length === 2,
      row: { ...row, history: row.history.slice(0, -1) },
    };
  }

  /**
   * Ends up to `limit` unfinished tasks in `scope` with `status`, from
   * outside their runs, in one transaction: locks them (see
   * `lockCandidatesSql`), reads their artifact events under the locks, and
   * writes each one's end with the artifacts `foldOf` makes of them — so
   * nothing a run appends can slip between the fold and the end. Each task
   * is ended exactly once (the write is conditional on it being unfinished).
   * Returns how many were locked, and the status events written.
   */
  async endBatch(
    scope: EndScope,
    status: StatusPayload,
    limit: number,
    foldOf: (task: EndCandidate, events: StoredTaskEvent[]) => ArtifactJson[],
  ): Promise<{ locked: number; ended: StoredTaskEvent[] }> {
    const done = await this.ds.transaction(async (q) => {
      const p = new Params();
      const rows = await q.query<EndCandidate[]>(lockCandidatesSql(scope, limit, p), p.values);
      if (rows.length === 0) return { locked: 0, ended: [], rows };
      const byTask = await this.events.artifactEvents(
        rows.map((r) => ({ taskId: r.taskId, uptoSeq: r.lastSeq })),
        q,
      );
      const tasks = rows.map((r) => ({ taskId: r.taskId, artifacts: foldOf(r, byTask.get(r.taskId) ?? []) }));
      const end = new Params();
      const ended = await q.query<EventRow[]>(endManySql(scope, tasks, status, this.identity.id, end), end.values);
      return { locked: rows.length, ended: toStoredEvents(ended), rows };
    });
    const tenantOf = new Map(done.rows.map((r) => [r.taskId, r.tenantId]));
    for (const e of done.ended) this.stats.taskSettled(tenantOf.get(e.taskId) ?? '', status.state);
    return { locked: done.locked, ended: done.ended };
  }

  /** Whether any unfinished task is left in `scope` (one skipped by `endBatch` while a write held it, say). */
  async anyLeft(scope: EndScope): Promise<boolean> {
    const p = new Params();
    const rows = await this.ds.query<unknown[]>(anyLeftSql(scope, p), p.values);
    return rows.length > 0;
  }

  /** Deletes a context's terminal tasks (with their events); returns how many. */
  async deleteEndedInContext(tenantId: string, agentId: string, contextId: string): Promise<number> {
    const rows = await this.ds.query<{ n: number }[]>(DELETE_ENDED_IN_CONTEXT, [tenantId, agentId, contextId]);
    return rows[0]?.n ?? 0;
  }

  /** Retention: deletes up to `batch` tasks that ended more than `days` ago, with their events; returns how many. */
  async purgeEnded(days: number, batch: number): Promise<number> {
    const [row] = await this.ds.query<{ n: number }[]>(PURGE_ENDED, [days, batch]);
    return row?.n ?? 0;
  }

  private async appendMany(items: AppendItem[]): Promise<(Appended | null)[]> {
    const input = items.map(({ taskId, events, change }, i) => appendRecord(i, taskId, events, change));
    const rows = await this.sql.query<TaskRow & { i: number; at: Date }>(APPEND, [
      JSON.stringify(input),
      this.identity.id,
    ]);
    const out: (Appended | null)[] = items.map(() => null);
    for (const r of rows) {
      const item = items[r.i];
      if (!item) continue;
      const { i: _i, at, ...row } = r;
      const first = r.lastSeq - item.events.length;
      const createdAt = isoOf(at);
      const events = item.events.map((e, k) => stored(e, item.taskId, first + k + 1, createdAt));
      out[r.i] = item.change.state ? { events: events, row } : { events: events };
      this.meter.record(r.tenantId, callsOf(item.events));
      if (item.change.state && isSettled(item.change.state)) {
        this.metrics.tasksEnded.inc({ state: item.change.state, agent: this.metrics.agent(row.agentId) });
        this.stats.taskSettled(row.tenantId, item.change.state);
      }
    }
    return out;
  }

  private async createMany(items: CreateItem[]): Promise<(StoredTaskEvent[] | DomainError)[]> {
    const folded = items.map((item) => {
      item.sent = true;
      return fold(item);
    });
    const input = items.map(({ task, first, lease }, i) => createRecord(i, task, first, lease, folded[i]));
    const [r] = await this.sql.query<{ at: Date; n: number; refused: number[] }>(createStatement(input), [
      JSON.stringify(input),
    ]);
    const refused = new Set(r?.refused ?? []);
    if (!r || r.n + refused.size !== items.length) throw new Error(`created ${r?.n ?? 0} of ${items.length} tasks`);
    const createdAt = isoOf(r.at);
    return items.map((item, i) => {
      if (refused.has(i)) return runningCapReached(item.task.runningCap ?? 0);
      const f = folded[i];
      this.meter.record(item.task.tenantId, callsOf(f.events));
      this.stats.taskStarted(item.task.tenantId);
      const events = f.events.map((e, k) => stored(e, item.task.taskId, k + 1, createdAt));
      // The appends merged into it are answered now, each with its own events (and the row, if it moved the state).
      const tail = item.tail.splice(0);
      mergedAnswers(item.task, tail, f, events, r.at).forEach((answer, k) => {
        if (answer?.row && isSettled(answer.row.state)) {
          this.metrics.tasksEnded.inc({ state: answer.row.state, agent: this.metrics.agent(item.task.agentId) });
          this.stats.taskSettled(item.task.tenantId, answer.row.state);
        }
        tail[k].resolve(answer);
      });
      return events.slice(0, item.first.length);
    });
  }
}
