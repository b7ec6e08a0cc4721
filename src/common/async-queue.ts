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

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      await this.wait();
      if (this.items.length > 0) {
        yield this.items.shift() as T;
        continue;
      }
      if (this.error !== undefined) throw this.error;
      return;
    }
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
