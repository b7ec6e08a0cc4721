/**
 * An unbounded-by-default async queue: producers `push`, one consumer
 * iterates. `close()` ends the iteration after the queued items;
 * `fail(err)` ends it with an error. With `limit`, a push beyond it
 * fails the queue instead of growing without bound.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;
  private error: Error | undefined;

  constructor(private readonly limit = Infinity) {}

  get size(): number {
    return this.items.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  push(item: T): boolean {
    if (this.closed) return false;
    if (this.items.length >= this.limit) {
      this.fail(new QueueOverflowError(this.limit));
      return false;
    }
    this.items.push(item);
    this.wake();
    return true;
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  fail(err: Error): void {
    if (this.closed) return;
    this.error = err;
    this.closed = true;
    this.wake();
  }

  /** Takes everything queued now (possibly nothing) without waiting. */
  drain(): T[] {
    return this.items.splice(0);
  }

  /** Waits until there is an item or the queue is closed. */
  async wait(): Promise<void> {
    while (this.items.length === 0 && !this.closed) {
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  /**
   * The items in order, then the end (or the error). A plain iterator rather than an async generator: an
   * item already queued is handed over in one resolved promise, without a generator's promises per step.
   * Calls of `next` made before the previous one settled are answered in order; after `return` (a
   * consumer's `break`), or the end, every `next` is done.
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    let finished = false;
    // The last `next` still waiting; a `next` called meanwhile is answered after it.
    let tail: Promise<IteratorResult<T>> | undefined;
    const step = (): IteratorResult<T> | undefined => {
      if (finished) return { value: undefined, done: true };
      if (this.items.length > 0) return { value: this.items.shift() as T, done: false };
      if (!this.closed) return undefined;
      finished = true;
      if (this.error !== undefined) throw this.error;
      return { value: undefined, done: true };
    };
    const waiting = async (before: Promise<unknown> | undefined): Promise<IteratorResult<T>> => {
      if (before) await before.catch(() => undefined);
      for (;;) {
        await this.wait();
        const r = step();
        if (r) return r;
      }
    };
    const next = (): Promise<IteratorResult<T>> => {
      // Answered at once: an item, or the end (an error is thrown by `waiting`, as a rejection).
      if (!tail && (finished || this.items.length > 0 || (this.closed && this.error === undefined))) {
        return Promise.resolve(step()!);
      }
      const p = waiting(tail);
      tail = p;
      const settled = (): void => {
        if (tail === p) tail = undefined;
      };
      p.then(settled, settled);
      return p;
    };
    return {
      next,
      return: (): Promise<IteratorResult<T>> => {
        finished = true;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

export class QueueOverflowError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} items queued`);
    this.name = 'QueueOverflowError';
  }
}
