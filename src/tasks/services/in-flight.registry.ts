import { Injectable } from '@nestjs/common';
import type { AsyncQueue } from '../../common/async-queue.js';
import type { RunInput } from '../../orchestrator/run-event.js';

export interface InFlightRun {
  abort: AbortController;
  /** Continuation messages for the running turn. */
  inbox: AsyncQueue<RunInput>;
  /** Resolves when the run has written its last event. */
  finished: Promise<void>;
}

/** The runs this process holds, by task id. */
@Injectable()
export class InFlightRegistry {
  private readonly runs = new Map<string, InFlightRun>();

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
