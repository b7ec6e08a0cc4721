/**
 * Which owners of running tasks are gone, by an unbroken watch of the replicas' notice connections
 * (`arbiter:<id>` in `pg_stat_activity`): the sweep (`LeaseService`) ends an owner's tasks once their leases ran
 * out and the owner has been gone for a full lease.
 *
 * An owner's absence is counted from the first look that missed a connection seen before — not from its lease's
 * end: a replica that dies loses its connection at once, and its lease runs out up to a lease later, so counting
 * from there would keep its tasks running for up to two leases and more. An owner never seen connected (it died
 * before this replica watched) is counted from the look that found its leases out. Every count starts again after a
 * gap in the watch (this replica's own outage, a hang): what happened meanwhile is not known. Pure: the caller
 * gives the time.
 */
export class OwnerWatch {
  /** Expired owners not connected, and since when they are counted gone. */
  private readonly gone = new Map<string, number>();
  /** Replicas seen connected, then missed: since when. */
  private readonly absent = new Map<string, number>();
  private connected = new Set<string>();
  /** When the last look was (0: never). */
  private lastLook = 0;

  constructor(private readonly leaseMs: number) {}

  /**
   * One look, at `now` (ms): `expired`, the owners (other than this replica) with running tasks whose leases ran
   * out; `live`, the replicas connected now. Returns the owners gone for a full lease.
   */
  look(now: number, expired: readonly string[], live: ReadonlySet<string>): string[] {
    if (now - this.lastLook > this.leaseMs / 2) {
      this.gone.clear();
      this.absent.clear();
    } else {
      for (const id of this.connected) if (!live.has(id) && !this.absent.has(id)) this.absent.set(id, now);
    }
    this.lastLook = now;
    this.connected = new Set(live);
    for (const id of live) this.absent.delete(id);
    for (const owner of [...this.gone.keys()]) if (!expired.includes(owner) || live.has(owner)) this.gone.delete(owner);
    for (const owner of expired) {
      if (!live.has(owner) && !this.gone.has(owner)) this.gone.set(owner, this.absent.get(owner) ?? now);
    }
    // A replica that left with nothing running never shows up as expired: forgotten after a few leases. An owner
    // forgotten so is counted afresh if its tasks' leases are found out later — which a replica that renews cannot
    // be, since it renews on the connection whose absence is counted.
    for (const [id, since] of this.absent)
      if (now - since > 4 * this.leaseMs && !this.gone.has(id)) this.absent.delete(id);
    return [...this.gone].filter(([, since]) => now - since >= this.leaseMs).map(([owner]) => owner);
  }
}
