import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { AsyncQueue, QueueOverflowError } from '../../common/async-queue.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { EventReads } from '../repositories/event-reads.repository.js';
import { TaskLogWriter } from '../repositories/task-log.writer.js';
import type { Appended, TaskRowChange } from '../repositories/task-log.types.js';
import { TaskReads } from '../repositories/task-reads.repository.js';
import { TaskError } from '../task.errors.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import { isTerminal } from '../task-state.js';
import { EventBus } from './event-bus.js';

const isEnd = (e: StoredTaskEvent): boolean => e.kind === 'status' && isTerminal(e.payload.state);

type LiveItem = StoredTaskEvent | { poke: number };

/**
 * A subscription to a task's committed events in this process (and pokes
 * for those written elsewhere), buffered until a `tail` reads them. Made by
 * `EventLog.watch` before anything after its seq can be written, it lets
 * that tail skip reading the log's backlog.
 */
export class Watch {
  readonly live: AsyncQueue<LiveItem>;
  private readonly unsubscribe: () => void;

  constructor(
    bus: EventBus,
    readonly taskId: string,
    limit: number,
  ) {
    this.live = new AsyncQueue<LiveItem>(limit);
    this.unsubscribe = bus.subscribe(taskId, (events, poked) => {
      if (poked !== undefined) this.live.push({ poke: poked });
      for (const e of events) this.live.push(e);
    });
  }

  /** Ends the subscription (idempotent); a tail over it stops after what it has buffered. */
  close(): void {
    this.unsubscribe();
    this.live.close();
  }
}

/**
 * The task event log: append (and publish to this process's watchers; other
 * replicas hear the NOTIFY sent on commit), read, and `tail` — the one way
 * every stream follows a task, on any replica.
 */
@Injectable()
export class EventLog {
  constructor(
    private readonly events: EventReads,
    private readonly writer: TaskLogWriter,
    private readonly tasks: TaskReads,
    private readonly bus: EventBus,
    private readonly config: AppConfig,
  ) {}

  /** Appends events with `change` (see `TaskLogWriter.append`) and publishes what was committed. */
  append(taskId: string, events: TaskEventBody[], change?: TaskRowChange): Promise<Appended | null> {
    return this.writer.append(taskId, events, change).then((stored) => {
      if (stored) this.bus.publish(taskId, stored.events);
      return stored;
    });
  }

  /** Hands events committed by another write path (creation, continuation, ends) to this process's watchers. */
  publish(taskId: string, events: StoredTaskEvent[]): void {
    this.bus.publish(taskId, events);
  }

  /** Calls `listener` with the task id of every write committed here or heard from another replica; returns the unsubscribe. */
  onWrite(listener: (taskId: string) => void): () => void {
    return this.bus.tap(listener);
  }

  read(tenantId: string, taskId: string, afterSeq: number, uptoSeq?: number): Promise<StoredTaskEvent[]> {
    return this.events.events(tenantId, taskId, afterSeq, uptoSeq);
  }

  /** The first `limit` events of the tenant's task after `afterSeq`, oldest first (a push delivery's batch). */
  readBatch(tenantId: string, taskId: string, afterSeq: number, limit: number): Promise<StoredTaskEvent[]> {
    return this.events.eventsBatch(tenantId, taskId, afterSeq, limit);
  }

  /**
   * Subscribes to a task's events now, for a `tail` that starts later: made
   * before anything after the seq the tail will start from can be written
   * (a new task's stream, before its run starts), it spares that tail the
   * read of the log's backlog. Close it if it is not given to a tail.
   */
  watch(taskId: string): Watch {
    return new Watch(this.bus, taskId, this.config.sseBufferEvents);
  }

  /**
   * The task's events after `afterSeq`: the stored backlog, then live ones,
   * until (and including) the terminal event. Subscribes before reading the
   * backlog and drops duplicates by seq, so nothing is lost or repeated at
   * the boundary; a gap (events committed elsewhere, or out of order here)
   * is read from the log. Stops early when `signal` aborts; a subscriber that
   * falls more than the buffer behind gets `subscriber_overflow` with the seq
   * to resume after. With `watch` (see `watch`), subscribed before any event
   * after `afterSeq` existed, there is no backlog to read.
   */
  async *tail(
    tenantId: string,
    taskId: string,
    afterSeq: number,
    signal?: AbortSignal,
    watch?: Watch,
  ): AsyncGenerator<StoredTaskEvent> {
    const sub = watch ?? this.watch(taskId);
    const live = sub.live;
    const onAbort = (): void => live.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) live.close(); // gone before we listened
    // What has been read; only events after `afterSeq` are shown, but the task's end ends the stream wherever it is.
    let last = afterSeq;
    try {
      if (!watch) {
        const backlog = await this.read(tenantId, taskId, afterSeq);
        for (const e of backlog) {
          last = e.seq;
          yield e;
          if (isEnd(e)) return;
        }
        // An empty backlog may mean a resume at or past the end (nothing will come); a non-empty one without the
        // terminal event means it was not written yet, and it will arrive live.
        if (backlog.length === 0) {
          const now = await this.tasks.stateOf(tenantId, taskId);
          if (!now || isTerminal(now.state)) {
            for (const e of await this.read(tenantId, taskId, last)) yield e;
            return;
          }
          // A resume point past the last event (no server gave it): read on from the real end, so that the
          // task's end is seen, and shown to whoever waits for it, however far ahead the point is.
          if (now.lastSeq < last) last = now.lastSeq;
        }
      }
      for await (const item of live) {
        const upto = 'poke' in item ? item.poke : item.seq - 1;
        if (upto > last) {
          let missed: StoredTaskEvent[];
          try {
            missed = await this.read(tenantId, taskId, last, upto >= Number.MAX_SAFE_INTEGER ? undefined : upto);
          } catch (err) {
            // The database is away: keep the stream and read again in a second (this item included).
            if (!isDatabaseUnavailable(err)) throw err;
            const again = 'poke' in item ? item.poke : item.seq;
            setTimeout(() => live.push({ poke: again }), 1_000).unref();
            continue;
          }
          for (const e of missed) {
            last = e.seq;
            if (e.seq > afterSeq) yield e;
            if (isEnd(e)) return;
          }
        }
        if ('poke' in item || item.seq <= last) continue;
        last = item.seq;
        if (item.seq > afterSeq) yield item;
        if (isEnd(item)) return;
      }
    } catch (err) {
      // Never a resume point before the one asked for (`last` is below it while reading on from a point past the end).
      if (err instanceof QueueOverflowError) throw TaskError.overflow(Math.max(last, afterSeq));
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      sub.close();
    }
  }
}
