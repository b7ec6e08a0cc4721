import type { RunInput } from '../../orchestrator/run-event.js';
import type { HeldRun, QueuedInput } from './run-registry.js';

/** A turn's input, from the run's inbox; the newest message it took (`taken`) bounds what it may settle. */
export class InboxInputs implements AsyncIterable<RunInput> {
  constructor(
    private readonly run: HeldRun,
    public taken: number,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<RunInput> {
    const it = this.run.inbox.steps();
    return {
      next: () => {
        const r = it.next();
        return r instanceof Promise ? r.then((v) => this.took(v)) : Promise.resolve(this.took(r));
      },
    };
  }

  private took(r: IteratorResult<QueuedInput>): IteratorResult<QueuedInput> {
    if (!r.done) this.taken = r.value.seq;
    return r;
  }
}
