import { Injectable } from '@nestjs/common';
import type { StoredTaskEvent } from '../task-events.js';

/**
 * A listener gets committed events written by this process, or a poke: the
 * log holds events up to `pokedSeq` written elsewhere (another replica), to
 * be read from the log.
 */
export type EventListener = (events: StoredTaskEvent[], pokedSeq?: number) => void;

/**
 * In-process fan-out of committed events, per task. Events written here are
 * handed over directly; events written by another replica arrive as a poke
 * (see `ReplicaNotices`), and the listener reads them from the log. A late
 * subscriber reads the log first (see `EventLog.tail`), so the bus may drop
 * nothing it was not told about.
 */
@Injectable()
export class EventBus {
  private readonly listeners = new Map<string, Set<EventListener>>();
  /** Told the task id of every write, here or on another replica (the push worker's wake-up). */
  private readonly taps = new Set<(taskId: string) => void>();

  /** Calls `tap` with the task id of every committed write this process hears of. */
  tap(tap: (taskId: string) => void): () => void {
    this.taps.add(tap);
    return () => this.taps.delete(tap);
  }

  subscribe(taskId: string, listener: EventListener): () => void {
    let set = this.listeners.get(taskId);
    if (!set) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      const s = this.listeners.get(taskId);
      if (!s) return;
      s.delete(listener);
      if (s.size === 0) this.listeners.delete(taskId);
    };
  }

  publish(taskId: string, events: StoredTaskEvent[]): void {
    if (events.length === 0) return;
    for (const t of this.taps) t(taskId);
    const set = this.listeners.get(taskId);
    if (!set) return;
    for (const l of [...set]) l(events);
  }

  /** Another replica committed events of `taskId` up to `seq`. */
  poke(taskId: string, seq: number): void {
    for (const t of this.taps) t(taskId);
    const set = this.listeners.get(taskId);
    if (!set) return;
    for (const l of [...set]) l([], seq);
  }

  /** After a gap in notices (the notice connection came back): every listener re-reads the log. */
  pokeAll(): void {
    for (const taskId of [...this.listeners.keys()]) this.poke(taskId, Number.MAX_SAFE_INTEGER);
  }

  listenerCount(taskId: string): number {
    return this.listeners.get(taskId)?.size ?? 0;
  }
}
