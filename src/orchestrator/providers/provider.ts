/** One message of a model conversation. */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface CompletionRequest {
  /** The provider's own model name (routing prefix removed). */
  model: string;
  system: string;
  messages: ChatMessage[];
  maxTokens: number;
  temperature: number;
}

export type CompletionEvent =
  | { type: 'text'; delta: string }
  /** The call's tokens (whole numbers ≥ 0, see `tokenCount`); `cachedTokens` are part of `inputTokens`. */
  | { type: 'usage'; inputTokens: number; outputTokens: number; cachedTokens?: number }
  | { type: 'stop'; reason: string };

/** Stable codes for provider failures: what clients and logs see, never the provider's raw text or keys. */
export type ProviderErrorCode =
  | 'auth_failed'
  | 'rate_limited'
  | 'bad_request'
  | 'provider_error'
  | 'provider_unavailable'
  | 'timeout'
  | 'cancelled'
  | 'model_unavailable';

export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    /** Worth another attempt (429, 5xx, connection) if nothing was streamed yet. */
    readonly retryable = false,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/**
 * A model provider: one streamed completion. Aborting `signal` aborts the
 * HTTP request at once. Errors are `ProviderError`s.
 */
export interface Provider {
  readonly name: string;
  /** Where its requests go; with the model, the key of a circuit breaker. */
  readonly baseUrl: string;
  complete(req: CompletionRequest, signal: AbortSignal): AsyncIterable<CompletionEvent>;
}

/**
 * The longest wait a provider may ask for (429 or 5xx with `Retry-After`)
 * that is still worth waiting for within a run; a longer one fails the call.
 */
export const MAX_RETRY_AFTER_MS = 30_000;

/**
 * Maps an HTTP status to a stable code (the body is never passed on).
 * `retryAfterMs` is the wait the provider asked for, if any.
 */
export function errorForStatus(provider: string, status: number, retryAfterMs?: number): ProviderError {
  if (status === 401 || status === 403)
    return new ProviderError('auth_failed', `${provider} refused the credentials (HTTP ${status})`);
  if (status === 404) return new ProviderError('model_unavailable', `${provider} does not know this model (HTTP 404)`);
  if (status !== 429 && status < 500)
    return new ProviderError('bad_request', `${provider} rejected the request (HTTP ${status})`);
  const code = status === 429 ? 'rate_limited' : 'provider_error';
  const what = status === 429 ? `${provider} is rate limiting (HTTP 429)` : `${provider} failed (HTTP ${status})`;
  if (retryAfterMs !== undefined && retryAfterMs > MAX_RETRY_AFTER_MS) {
    // Honoured means not calling again before then: give up now rather than retry early.
    const s = Math.ceil(retryAfterMs / 1000);
    return new ProviderError(
      code,
      `${what} and asked for a wait of ${s} s, longer than Arbiter waits (${MAX_RETRY_AFTER_MS / 1000} s)`,
    );
  }
  return new ProviderError(code, what, true, retryAfterMs);
}
