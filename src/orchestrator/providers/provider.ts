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
  | { type: 'usage'; inputTokens: number; outputTokens: number }
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
  complete(req: CompletionRequest, signal: AbortSignal): AsyncIterable<CompletionEvent>;
}

/** Maps an HTTP status to a stable code (the body is never passed on). */
export function errorForStatus(provider: string, status: number, retryAfter: string | null): ProviderError {
  const after =
    retryAfter && /^\d+(\.\d+)?$/.test(retryAfter) ? Math.min(Number(retryAfter) * 1000, 10_000) : undefined;
  if (status === 401 || status === 403)
    return new ProviderError('auth_failed', `${provider} refused the credentials (HTTP ${status})`);
  if (status === 429) return new ProviderError('rate_limited', `${provider} is rate limiting (HTTP 429)`, true, after);
  if (status === 404) return new ProviderError('model_unavailable', `${provider} does not know this model (HTTP 404)`);
  if (status >= 500) return new ProviderError('provider_error', `${provider} failed (HTTP ${status})`, true, after);
  return new ProviderError('bad_request', `${provider} rejected the request (HTTP ${status})`);
}
