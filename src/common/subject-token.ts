import { inspect } from 'node:util';

/**
 * The raw JWT an inbound caller authenticated with, kept for outbound calls that exchange it on the caller's
 * behalf (RFC 8693 token exchange). It is held in a private field: serialising, logging or inspecting the object
 * shows a placeholder, never the token; only `reveal()` gives it, to the token endpoint.
 */
export class SubjectToken {
  readonly #token: string;

  constructor(token: string) {
    this.#token = token;
  }

  /** The token itself: for the token endpoint's `subject_token`, nowhere else. */
  reveal(): string {
    return this.#token;
  }

  toJSON(): string {
    return '[subject token]';
  }

  toString(): string {
    return '[subject token]';
  }

  [inspect.custom](): string {
    return 'SubjectToken [hidden]';
  }
}
