/**
 * Tests never depend on the machine's speed: they wait for a signal (a log
 * line, an event, a state) and assert order and outcome, never a number of
 * milliseconds. A bound exists only so that a broken test fails instead of
 * hanging, and it is generous: `PATIENCE_MS`, three minutes, times
 * `TEST_TIMEOUT_SCALE` (e.g. `TEST_TIMEOUT_SCALE=3` on a very slow machine).
 */
export const TIMEOUT_SCALE = scale(process.env.TEST_TIMEOUT_SCALE);

export const PATIENCE_MS = Math.round(180_000 * TIMEOUT_SCALE);

function scale(raw: string | undefined): number {
  const n = Number(raw ?? '1');
  return Number.isFinite(n) && n > 0 ? n : 1;
}

/** `p`, or a rejection naming `what` if it has not settled within `ms` (default `PATIENCE_MS`). */
export function within<T>(p: Promise<T>, what: string, ms = PATIENCE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * A meeting point for `parties` calls: `arrive()` resolves when all have
 * arrived. If they do not all arrive within `ms` (they run one after another,
 * or what should arrive first never comes), it resolves anyway and `met`
 * stays false: the test asserts `met` — the overlap or order happened —
 * rather than measuring how far apart things were.
 */
export class Barrier {
  /** Every party arrived before the barrier gave up. */
  met = false;
  private arrived = 0;
  private gaveUp = false;
  private readonly all: Promise<void>;
  private open!: () => void;

  constructor(
    private readonly parties: number,
    ms = PATIENCE_MS,
  ) {
    this.all = new Promise<void>((resolve) => {
      this.open = resolve;
      setTimeout(() => {
        this.gaveUp = true;
        resolve();
      }, ms).unref();
    });
  }

  /** Settles when every party has arrived (or the barrier gave up), without arriving. */
  get reached(): Promise<void> {
    return this.all;
  }

  arrive(): Promise<void> {
    this.arrived += 1;
    if (this.arrived === this.parties && !this.gaveUp) {
      this.met = true;
      this.open();
    }
    return this.all;
  }
}

/**
 * Settles only after `PATIENCE_MS`: for a fake that must keep a request open
 * (a stream mid-way, a tool call) until the test ends it by cancelling.
 */
export function stall(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, PATIENCE_MS).unref());
}
