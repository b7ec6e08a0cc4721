/**
 * A value that arrives once, for whoever waits for it: `open` sets it (the first call wins, as with a
 * promise's `resolve`), `wait` gives a promise of it. The promise is made only when someone waits: most
 * latches of a short request are opened and never waited for, and a promise with its resolver costs about
 * a quarter of a kilobyte.
 */
export class Latch<T = void> {
  private opened = false;
  private value: T | undefined;
  private promise: Promise<T> | undefined;
  private resolve: ((value: T) => void) | undefined;

  get isOpen(): boolean {
    return this.opened;
  }

  open(value: T): void {
    if (this.opened) return;
    this.opened = true;
    this.value = value;
    this.resolve?.(value);
    this.resolve = undefined;
  }

  wait(): Promise<T> {
    return (this.promise ??= this.opened
      ? Promise.resolve(this.value as T)
      : new Promise<T>((resolve) => (this.resolve = resolve)));
  }
}
