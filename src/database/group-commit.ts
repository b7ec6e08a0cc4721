/** How a group commit batches. */
export interface GroupCommitOptions<I> {
  /** Most items in one statement. */
  maxBatch: number;
  /** Most statements in flight at once (the next batch gathers while they run). */
  maxInFlight: number;
  /**
   * Items with the same key are never in the same batch nor in two batches
   * in flight at once: they commit one after the other, in submission order.
   * Without it, items are independent (reads): any may share a batch.
   */
  keyOf?: (item: I) => string;
  /**
   * How heavy an item is (bytes it carries, e.g. file contents) and the most
   * a batch may carry: a batch closes before an item that would pass it (an
   * item heavier than that goes alone), so 64 writes with large files never
   * become one statement of hundreds of MiB.
   */
  weightOf?: (item: I) => number;
  maxBatchWeight?: number;
  /** Called with the size of every batch sent (metrics, tests). */
  onBatch?: (size: number) => void;
  /**
   * Whether a failed batch may be split and its items retried alone: only
   * when the failure says the statement did not commit (the database refused
   * it). After a timeout or a lost connection the statement may still
   * commit, and retrying it would write twice: every caller gets the error.
   * Default: always.
   */
  splittable?: (err: unknown) => boolean;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: writes submitted by concurrent callers in the same tick go
 * to the database together, as one statement (`execute` gets the batch and
 * returns one result per item, in order), and each caller is resolved when
 * that statement has committed — never before. While batches are in flight
 * the next one gathers. A batch that the database refused is split: every
 * item is retried alone, so only the callers whose own write fails see an
 * error (see `splittable` for failures whose outcome is unknown). Reads
 * batch the same way (without keys): concurrent lookups become one query.
 */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private readonly busy = new Set<string>();
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly execute: (items: I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions<I>,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Gathers what else arrives in this tick, then sends. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      if (batch.length === 0) return; // everything queued waits on a key in flight
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        const keyOf = this.options.keyOf;
        if (keyOf) for (const p of batch) this.busy.delete(keyOf(p.item));
        if (this.queue.length > 0) this.drain();
      });
    }
  }

  /** The oldest items whose keys are free, one per key, up to the batch size. */
  private take(): Pending<I, O>[] {
    const keyOf = this.options.keyOf;
    if (!keyOf && this.options.weightOf === undefined) return this.queue.splice(0, this.options.maxBatch);
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    const held = new Set<string>();
    const maxWeight = this.options.maxBatchWeight ?? Number.POSITIVE_INFINITY;
    let weight = 0;
    for (const p of this.queue) {
      const key = keyOf?.(p.item);
      const w = this.options.weightOf?.(p.item) ?? 0;
      const full = batch.length >= this.options.maxBatch || (batch.length > 0 && weight + w > maxWeight);
      if (full || (key !== undefined && (this.busy.has(key) || held.has(key)))) {
        if (key !== undefined) held.add(key); // a later item of this key must not overtake this one
        rest.push(p);
        continue;
      }
      if (key !== undefined) held.add(key);
      batch.push(p);
      weight += w;
    }
    if (keyOf) for (const p of batch) this.busy.add(keyOf(p.item));
    this.queue = rest;
    return batch;
  }

  private async send(batch: Pending<I, O>[]): Promise<void> {
    this.options.onBatch?.(batch.length);
    try {
      const results = await this.execute(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]));
      return;
    } catch (err) {
      if (batch.length === 1 || (this.options.splittable && !this.options.splittable(err))) {
        for (const p of batch) p.reject(err);
        return;
      }
    }
    // Split: each item alone, so one bad row fails only its own caller.
    await Promise.all(
      batch.map(async (p) => {
        try {
          const [result] = await this.execute([p.item]);
          p.resolve(result);
        } catch (err) {
          p.reject(err);
        }
      }),
    );
  }
}
