import { asError } from './errors.js';

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

  /**
   * The items in order, then the end (or the error), as `steps`: an item already queued is handed over at once,
   * without a promise, and a `next` that has to wait is one promise that the producer's `push` settles. Calls
   * of `next` made before the previous one settled are answered in order; after `return` (a consumer's
   * `break`), or the end, every `next` is done.
   */
  steps(): Steps<T> {
    let finished = false;
    // The calls of `next` still waiting, oldest first.
    const waiting: { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void }[] = [];
    const step = (): IteratorResult<T> | undefined => {
      if (finished) return { value: undefined, done: true };
      if (this.items.length > 0) return { value: this.items.shift() as T, done: false };
      if (!this.closed) return undefined;
      finished = true;
      if (this.error !== undefined) throw this.error;
      return { value: undefined, done: true };
    };
    // Answers the waiting calls while there is something to answer them with; else waits for the next wake.
    const serve = (): void => {
      while (waiting.length > 0) {
        let r: IteratorResult<T> | undefined;
        try {
          r = step();
        } catch (err) {
          waiting.shift()!.reject(asError(err));
          continue;
        }
        if (!r) {
          this.waiter = serve;
          return;
        }
        waiting.shift()!.resolve(r);
      }
    };
    return {
      next: (): IteratorResult<T> | Promise<IteratorResult<T>> => {
        if (waiting.length === 0) {
          // Answered at once: an item, or the end; the error, as a rejected promise.
          try {
            const r = step();
            if (r) return r;
          } catch (err) {
            return Promise.reject(asError(err));
          }
        }
        return new Promise((resolve, reject) => {
          waiting.push({ resolve, reject });
          this.waiter = serve;
        });
      },
      return: (): IteratorResult<T> => {
        finished = true;
        serve();
        return { value: undefined, done: true };
      },
    };
  }

  /** `steps` as an async iterator: each step a promise. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return promised(this.steps());
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

/**
 * An iterator whose `next` answers at once when it can (a value, not a promise) and with a promise when it
 * has to wait: a consumer that takes many items already at hand awaits only what is not. A failure comes as a
 * rejected promise, never as a throw. `return` is a consumer's `break`, as in an async iterator.
 */
export interface Steps<T> {
  next(): IteratorResult<T> | Promise<IteratorResult<T>>;
  /** A consumer's `break`: at once when there is nothing to wait for, else a promise. */
  return?(value?: undefined): IteratorResult<T> | Promise<IteratorResult<T>>;
}

/** `steps` as an async iterator (each `next` a promise), for `for await`. */
export function promised<T>(steps: Steps<T>): AsyncIterator<T> {
  return {
    next: () => {
      const r = steps.next();
      return r instanceof Promise ? r : Promise.resolve(r);
    },
    ...(steps.return
      ? {
          return: () => {
            const r = steps.return!();
            return r instanceof Promise ? r : Promise.resolve(r);
          },
        }
      : {}),
  };
}

export class QueueOverflowError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} items queued`);
    this.name = 'QueueOverflowError';
  }
}
