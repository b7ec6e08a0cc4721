import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OwnerWatch } from '../../src/tasks/runs/owner-watch.js';

const LEASE = 1_000;
const SWEEP = LEASE / 4;
const live = (...ids: string[]): Set<string> => new Set(ids);

/** Looks every quarter of a lease from `from` to `to` (ms) with what `world(t)` says; the first time `owner` is gone. */
function firstGone(
  watch: OwnerWatch,
  from: number,
  to: number,
  owner: string,
  world: (t: number) => { expired: string[]; live: Set<string> },
): number | undefined {
  for (let t = from; t <= to; t += SWEEP) {
    const { expired, live: connected } = world(t);
    if (watch.look(t, expired, connected).includes(owner)) return t;
  }
  return undefined;
}

describe('which owners are gone (src/tasks/runs/owner-watch.ts)', () => {
  it('a replica that dies is counted gone from the first look that missed it, not from the end of its lease', () => {
    const watch = new OwnerWatch(LEASE);
    // B renewed at 0 (its lease runs to 1000) and died at 100: its connection went at once.
    const died = 100;
    const at = firstGone(watch, 0, 5 * LEASE, 'b', (t) => ({
      expired: t >= 1_000 ? ['b'] : [],
      live: t < died ? live('a', 'b') : live('a'),
    }));
    // Missed at 250, out of lease at 1000: gone at 1250 — a lease after it was missed (it was 2000 when counted from
    // the end of its lease).
    assert.equal(at, 1_250);
  });

  it('never before its lease ran out, however long it has been missed', () => {
    const watch = new OwnerWatch(LEASE);
    const at = firstGone(watch, 0, 10 * LEASE, 'b', (t) => ({
      expired: t >= 3_000 ? ['b'] : [],
      live: t < 100 ? live('b') : live(),
    }));
    assert.equal(at, 3_000);
  });

  it('an owner never seen connected is counted from the look that found its lease out', () => {
    const watch = new OwnerWatch(LEASE);
    assert.equal(
      firstGone(watch, 0, 5 * LEASE, 'b', () => ({ expired: ['b'], live: live('a') })),
      LEASE,
    );
  });

  it('a connected owner is never gone, however late its renewals; one back before a lease starts again', () => {
    const watch = new OwnerWatch(LEASE);
    assert.equal(
      firstGone(watch, 0, 10 * LEASE, 'b', () => ({ expired: ['b'], live: live('b') })),
      undefined,
    );
    // Missed from 10,250 to 10,750, back at 11,000, then missed for good from 12,000.
    const at = firstGone(watch, 10 * LEASE + SWEEP, 20 * LEASE, 'b', (t) => ({
      expired: ['b'],
      live: (t > 10_000 && t < 11_000) || t >= 12_000 ? live() : live('b'),
    }));
    assert.equal(at, 13_000);
  });

  it('a gap in the watch (an outage, a hang) starts every count again', () => {
    const watch = new OwnerWatch(LEASE);
    watch.look(0, [], live('b'));
    assert.deepEqual(watch.look(SWEEP, ['b'], live()), []);
    // No look for more than half a lease: B's absence before the gap does not count.
    assert.deepEqual(watch.look(SWEEP + LEASE, ['b'], live()), []);
    const at = firstGone(watch, 2 * SWEEP + LEASE, 5 * LEASE, 'b', () => ({ expired: ['b'], live: live() }));
    assert.equal(at, SWEEP + 2 * LEASE);
  });
});
