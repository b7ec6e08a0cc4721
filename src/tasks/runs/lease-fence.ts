import { Injectable } from '@nestjs/common';
import { abortable } from '../../common/abortable.js';

/**
 * Whether this replica's runs may act outside the process (call a model,
 * run a tool). Closed by `LeaseService` while the replica has been out of
 * touch with the database for half a lease — long enough that the others
 * could soon judge it gone and end its tasks — and opened again once its
 * leases are confirmed. A run waits at the fence before each such call; it
 * is never ended by it: a database outage pauses runs, it does not kill them.
 */
@Injectable()
export class LeaseFence {
  private opened: Promise<void> | undefined;
  private open: (() => void) | undefined;
  /** Runs waiting at the fence now. */
  waiting = 0;

  get closed(): boolean {
    return this.opened !== undefined;
  }

  close(): void {
    if (this.opened) return;
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  }

  reopen(): void {
    const open = this.open;
    this.opened = undefined;
    this.open = undefined;
    open?.();
  }

  /** Resolves at once while open; else when it opens, or rejects when `signal` aborts first. */
  async pass(signal?: AbortSignal): Promise<void> {
    if (!this.opened) return;
    this.waiting++;
    try {
      await abortable(this.opened, signal);
    } finally {
      this.waiting--;
    }
  }
}
