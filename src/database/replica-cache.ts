import type { ReplicaChannel } from './replica-channel.service.js';

/**
 * An in-process cache of database reads that other replicas can change,
 * kept honest by the replica channel: the owner invalidates entries when a
 * notice says they changed (here or on another replica). While the notice
 * connection is down nothing is served from it (a missed notice could leave
 * a stale entry), and after it comes back it starts empty. A read that
 * raced an invalidation is not stored (the generation moved on meanwhile).
 * Entries also expire after `ttlMs`, and the oldest go past `max`.
 */
export class ReplicaCache<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();
  private generation = 0;

  constructor(
    private readonly channel: ReplicaChannel,
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {
    channel.onReconnect(() => this.clear());
  }

  get(key: string): V | undefined {
    if (!this.usable()) {
      if (this.entries.size > 0) this.clear();
      return undefined;
    }
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (Date.now() - e.at > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** The generation to pass to `set` for a read that starts now. */
  begin(): number {
    return this.generation;
  }

  /** Stores what a read begun at `generation` found, unless something was invalidated since. */
  set(key: string, value: V, generation: number): void {
    if (generation !== this.generation || !this.usable()) return;
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, at: Date.now() });
  }

  delete(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  private usable(): boolean {
    return !this.channel.enabled || this.channel.connected;
  }
}
