import { Injectable } from '@nestjs/common';
import type { AsyncQueue } from '../../common/async-queue.js';
import type { RunInput } from '../../orchestrator/run-event.js';

export interface InFlightRun {
  abort: AbortController;
  /** Continuation messages for the running turn. */
  inbox: AsyncQueue<RunInput>;
  /** Resolves when the run has written its last event. */
  finished: Promise<void>;
  /** False once the run has decided to end: continuations must then start a new run. */
  accepting: boolean;
}

/** The runs this process holds, by task id. */
@Injectable()
export class InFlightRegistry {
  private readonly runs = new Map<string, InFlightRun>();
  private readonly locks = new Map<string, Promise<void>>();

  /**
   * Runs `fn` alone for this task within this process: a continuation and
   * the run deciding to end (or two continuations) never interleave, so a
   * message is either taken by the running turn or starts exactly one new run.
   */
  async withLock<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(taskId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.locks.set(taskId, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(taskId) === tail) this.locks.delete(taskId);
    }
  }

  get(taskId: string): InFlightRun | undefined {
    return this.runs.get(taskId);
  }

  set(taskId: string, run: InFlightRun): void {
    this.runs.set(taskId, run);
  }

  delete(taskId: string, run: InFlightRun): void {
    if (this.runs.get(taskId) === run) this.runs.delete(taskId);
  }

  get size(): number {
    return this.runs.size;
  }

  all(): [string, InFlightRun][] {
    return [...this.runs.entries()];
  }
}
