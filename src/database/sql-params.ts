/** Builds a parameter list as SQL text is assembled: `p.add(v)` returns `$n`. */
export class Params {
  readonly values: unknown[] = [];

  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}
