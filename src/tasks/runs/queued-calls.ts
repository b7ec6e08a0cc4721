/**
 * The model calls a run has reported and its loop has queued for writing, and the waits for a count of them:
 * before a model call the budgets are read only once the run's own earlier calls are queued (then flushed).
 */
export class QueuedCalls {
  private count = 0;
  private readonly waiting: { n: number; resolve: () => void }[] = [];

  /** One more call queued: the waits it completes end. */
  add(): void {
    this.count++;
    for (const w of this.waiting.splice(0)) {
      if (this.count >= w.n) w.resolve();
      else this.waiting.push(w);
    }
  }

  /** Resolves once `n` calls are queued; rejects with the abort's reason if `abort` fires first. */
  reached(n: number, abort: AbortSignal): Promise<void> {
    if (this.count >= n) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(abort.reason instanceof Error ? abort.reason : new Error('aborted'));
      if (abort.aborted) return onAbort();
      abort.addEventListener('abort', onAbort, { once: true });
      this.waiting.push({
        n,
        resolve: () => {
          abort.removeEventListener('abort', onAbort);
          resolve();
        },
      });
    });
  }
}
