import { promised, type Steps } from '../../common/async-queue.js';
import type { RunInput, RunInputs } from '../../orchestrator/run-event.js';
import type { HeldRun, QueuedInput } from './run-registry.js';

/** A turn's input, from the run's inbox; the newest message it took (`taken`) bounds what it may settle. */
export class InboxInputs implements RunInputs {
  constructor(
    private readonly run: HeldRun,
    public taken: number,
  ) {}

  /** The inbox's messages: one already there is handed over at once. */
  steps(): Steps<RunInput> {
    const it = this.run.inbox.steps();
    return {
      next: () => {
        const r = it.next();
        return r instanceof Promise ? r.then((v) => this.took(v)) : this.took(r);
      },
    };
  }

  [Symbol.asyncIterator](): AsyncIterator<RunInput> {
    return promised(this.steps());
  }

  private took(r: IteratorResult<QueuedInput>): IteratorResult<QueuedInput> {
    if (!r.done) this.taken = r.value.seq;
    return r;
  }
}
