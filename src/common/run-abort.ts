/**
 * An `AbortController` that answers whether it has aborted, and why, without
 * its `signal`. Node makes a controller's `AbortSignal` (an `EventTarget`
 * with its listener map: about a kilobyte and a half) on its first reading;
 * a run that is never canceled, and that neither calls out of the process
 * nor waits on a timer (the echo model without its delay), never needs one.
 * Code that only asks (`aborted`, `reason`, `throwIfAborted`) asks this;
 * code that listens or hands a signal on (a fetch, a timer, a tool) reads
 * `signal`, made then, already aborted if the controller is.
 */
export class RunAbort extends AbortController {
  /** Set by the first abort, never to `undefined` (no reason given: an `AbortError`). */
  #reason: unknown;

  get aborted(): boolean {
    return this.#reason !== undefined;
  }

  /** Why it aborted (`undefined` while it has not): what `signal.reason` is. */
  get reason(): unknown {
    return this.#reason;
  }

  /**
   * The first abort decides, as with a controller; a later one changes nothing. Without a reason, the reason
   * is the `AbortError` a controller gives. Set before the signal's listeners run: they may ask too.
   */
  override abort(reason?: unknown): void {
    if (this.aborted) return;
    this.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    super.abort(this.#reason);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.#reason;
  }
}
