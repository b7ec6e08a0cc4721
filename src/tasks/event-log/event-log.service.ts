import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { AsyncQueue, QueueOverflowError } from '../../common/async-queue.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { TaskEventRepository, type TaskRowChange } from '../repositories/task-event.repository.js';
import { TaskWrites, type Appended } from '../repositories/task-writes.js';
import { TaskRepository } from '../repositories/task.repository.js';
import { TaskError } from '../task.errors.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import { isTerminal } from '../task-state.js';
import { EventBus } from './event-bus.js';

const isEnd = (e: StoredTaskEvent): boolean => e.kind === 'status' && isTerminal(e.payload.state);

/**
 * The task event log: append (and publish to this process's watchers; other
 * replicas hear the NOTIFY sent on commit), read, and `tail` — the one way
 * every stream follows a task, on any replica.
 */
@Injectable()
export class EventLog {
  constructor(
    private readonly events: TaskEventRepository,
    private readonly writes: TaskWrites,
    private readonly tasks: TaskRepository,
    private readonly bus: EventBus,
    private readonly config: AppConfig,
  ) {}

  /** Appends events with `change` (see `TaskWrites.append`) and publishes what was committed. */
  async append(taskId: string, events: TaskEventBody[], change?: TaskRowChange): Promise<Appended | null> {
    const stored = await this.writes.append(taskId, events, change);
    if (stored) this.bus.publish(taskId, stored.events);
    return stored;
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

  /**
   * The task's events after `afterSeq`: the stored backlog, then live ones,
   * until (and including) the terminal event. Subscribes before reading the
   * backlog and drops duplicates by seq, so nothing is lost or repeated at
   * the boundary; a gap (events committed elsewhere, or out of order here)
   * is read from the log. Stops early when `signal` aborts; a subscriber that
   * falls more than the buffer behind gets `subscriber_overflow` with the seq
   * to resume after.
   */
  async *tail(
    tenantId: string,
    taskId: string,
    afterSeq: number,
    signal?: AbortSignal,
  ): AsyncGenerator<StoredTaskEvent> {
    const live = new AsyncQueue<StoredTaskEvent | { poke: number }>(this.config.sseBufferEvents);
    const unsubscribe = this.bus.subscribe(taskId, (events, poked) => {
      if (poked !== undefined) live.push({ poke: poked });
      for (const e of events) live.push(e);
    });
    const onAbort = (): void => live.close();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) live.close(); // gone before we listened
    let last = afterSeq;
    try {
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
            yield e;
            if (isEnd(e)) return;
          }
        }
        if ('poke' in item || item.seq <= last) continue;
        last = item.seq;
        yield item;
        if (isEnd(item)) return;
      }
    } catch (err) {
      if (err instanceof QueueOverflowError) throw TaskError.overflow(last);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      live.close();
    }
  }
}
