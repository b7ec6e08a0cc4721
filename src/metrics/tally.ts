import { Counter, type CounterConfiguration } from 'prom-client';

interface Leaf<L extends string> {
  labels: Record<L, string>;
  n: number;
}
type Level<L extends string> = Map<string, Level<L> | Leaf<L>>;

/**
 * A counter counted on every request: its increments are summed here, in
 * one map per label (in `names` order), and handed to the prom-client
 * counter when it is read (a scrape, or any `get`). prom-client's own `inc`
 * builds a hash string of the labels on every call; here a series already
 * seen costs a few map lookups and an addition.
 */
export class TalliedCounter<L extends string> {
  readonly counter: Counter<L>;
  private readonly names: readonly L[];
  private readonly root: Level<L> = new Map();

  constructor(config: CounterConfiguration<L> & { labelNames: readonly L[] }) {
    this.names = config.labelNames;
    const flush = (): void => this.flush();
    this.counter = new Counter({ ...config, collect: flush });
    // A registry's `resetMetrics` resets the counter: the sums not handed over yet go too.
    const reset = this.counter.reset.bind(this.counter);
    this.counter.reset = () => {
      this.root.clear();
      reset();
    };
  }

  /** Refused here, as prom-client refuses them, rather than at the next scrape: a bad count or label set. */
  inc(labels: Record<L, string>, by = 1): void {
    if (!Number.isFinite(by) || by < 0) throw new TypeError(`not a count to add: ${by}`);
    let level = this.root;
    const last = this.names.length - 1;
    for (let i = 0; i < last; i++) {
      const value = labels[this.names[i]];
      let next = level.get(value) as Level<L> | undefined;
      if (!next) level.set(value, (next = new Map()));
      level = next;
    }
    const value = labels[this.names[last]];
    let leaf = level.get(value) as Leaf<L> | undefined;
    if (!leaf) {
      // A new series: its labels are checked once (prom-client's own check, at its first increment), on a copy
      // (prom-client keeps the object it is given).
      leaf = { labels: { ...labels }, n: 0 };
      this.counter.inc(leaf.labels, 0);
      level.set(value, leaf);
    }
    leaf.n += by;
  }

  /** Hands the sums so far to the counter. */
  flush(): void {
    const walk = (level: Level<L>, depth: number): void => {
      for (const child of level.values()) {
        if (depth < this.names.length - 1) walk(child as Level<L>, depth + 1);
        else {
          const leaf = child as Leaf<L>;
          if (leaf.n === 0) continue;
          this.counter.inc(leaf.labels, leaf.n);
          leaf.n = 0;
        }
      }
    };
    walk(this.root, 0);
  }
}
