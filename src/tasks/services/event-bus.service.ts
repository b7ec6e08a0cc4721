import { Injectable } from '@nestjs/common';
import type { StoredTaskEvent } from '../task-events.js';

export type EventListener = (events: StoredTaskEvent[]) => void;

/**
 * Live delivery of committed events, per task, within this process.
 * Listeners get events only after they are durable; a late subscriber reads
 * the log first (see `TaskService.tail`), so the bus may drop nothing it
 * was not told about.
 */
@Injectable()
export class TaskEventBus {
  private readonly listeners = new Map<string, Set<EventListener>>();

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
    const set = this.listeners.get(taskId);
    if (!set) return;
    for (const l of [...set]) l(events);
  }

  listenerCount(taskId: string): number {
    return this.listeners.get(taskId)?.size ?? 0;
  }
}
