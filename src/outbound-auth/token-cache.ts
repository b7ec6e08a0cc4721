import { abortable } from '../common/abortable.js';
import { rememberIssued } from './issued-tokens.js';
import type { IssuedToken } from './token-endpoint.js';

/** A token is renewed this long before it expires: 30 s, or a tenth of a short lifetime. */
export function skewMs(expiresInS: number): number {
  return Math.min(30_000, (expiresInS * 1000) / 10);
}

/**
 * One access token, fetched when first needed and kept until shortly before it expires. Callers that need it
 * while it is being fetched share that one request; a failed fetch is not kept (the next caller tries again).
 * `invalidate` drops the token a remote refused, once: every caller that saw the same refusal then shares the one
 * fresh token, so a storm of 401s costs one refresh.
 */
export class TokenCache {
  private current: { token: string; renewAt: number } | undefined;
  private inflight: Promise<string> | undefined;

  constructor(private readonly fetchToken: () => Promise<IssuedToken>) {}

  /** The token; `signal` ends this caller's wait, not the shared fetch. */
  async get(signal?: AbortSignal): Promise<string> {
    if (this.current && Date.now() < this.current.renewAt) return this.current.token;
    this.inflight ??= this.fetchToken()
      .then((t) => {
        rememberIssued(t.token);
        this.current = { token: t.token, renewAt: Date.now() + t.expiresIn * 1000 - skewMs(t.expiresIn) };
        return t.token;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return abortable(this.inflight, signal);
  }

  /** A remote refused `token`: it is not handed out again (a newer one already in place stays). */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }
}
