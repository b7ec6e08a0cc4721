import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
  type CircuitBreakerPolicy,
} from 'cockatiel';
import { ProviderError, type CompletionEvent, type CompletionRequest, type Provider } from './provider.js';

export interface BreakerOptions {
  /** Faults in a row that open a model's breaker. */
  threshold: number;
  /** How long an open breaker fails calls at once before it lets one probe through. */
  halfOpenAfterMs: number;
  /** Breakers kept; beyond this the least recently used closed one is forgotten. */
  maxBreakers: number;
}

export const DEFAULT_BREAKER_OPTIONS: BreakerOptions = { threshold: 5, halfOpenAfterMs: 30_000, maxBreakers: 1000 };

/**
 * Whether an error says the model (or its provider) is broken, as opposed to
 * the request, the caller or back-pressure. A 429 is the provider pacing its
 * callers: it never opens a breaker, or one tenant's limit would stop all.
 */
export function isFault(err: Error): boolean {
  if (!(err instanceof ProviderError)) return true;
  switch (err.code) {
    case 'provider_error':
    case 'provider_unavailable':
    case 'timeout':
    case 'auth_failed':
      return true;
    case 'rate_limited':
    case 'bad_request':
    case 'model_unavailable':
    case 'cancelled':
      return false;
    default: {
      const never: never = err.code;
      return never;
    }
  }
}

/**
 * Circuit breakers (cockatiel) per provider, base URL and model: one model
 * that keeps failing is not called for a while, and other models — other
 * tenants' too — are not affected. After `halfOpenAfterMs` one call is let
 * through as a probe (others still fail at once); its success closes the
 * breaker, a fault opens it again.
 */
export class ProviderBreakers {
  private readonly breakers = new Map<string, CircuitBreakerPolicy>();

  constructor(private readonly opts: BreakerOptions = DEFAULT_BREAKER_OPTIONS) {}

  /** The breaker's state for a model, for tests and diagnostics. */
  state(provider: Provider, model: string): CircuitState {
    return this.breakers.get(keyOf(provider, model))?.state ?? CircuitState.Closed;
  }

  /** Every breaker kept: provider name, model and state (for the metrics). */
  *states(): Generator<{ provider: string; model: string; state: CircuitState }> {
    for (const [key, b] of this.breakers) {
      const [provider, , model] = JSON.parse(key) as [string, string, string];
      yield { provider, model, state: b.state };
    }
  }

  /**
   * One attempt of a streamed completion under the model's breaker. The
   * breaker sees the whole stream's outcome: a stream that fails after some
   * text is a fault too. A caller that stops reading early counts as neither.
   */
  async *call(provider: Provider, req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const breaker = this.breakerFor(provider, req.model);
    const closed = (): ProviderError => {
      const last = breaker.lastFailure;
      const code = last && 'error' in last && last.error instanceof ProviderError ? last.error.code : 'provider_error';
      return new ProviderError(
        'provider_unavailable',
        `${provider.name} model '${req.model}' is failing (last error: ${code}); not calling it for a while`,
      );
    };
    // cockatiel lets concurrent callers of a half-open breaker wait for the probe's
    // (possibly minutes-long) stream; fail them at once instead, as when it is open.
    if (breaker.state === CircuitState.HalfOpen) throw closed();

    let admit!: () => void;
    const admitted = new Promise<void>((resolve) => (admit = resolve));
    let settle!: (err?: Error) => void;
    const outcome = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err));
    });
    // The breaker's unit of work is a promise; here it is the stream, settled below as it ends.
    const guarded = breaker.execute(() => {
      admit();
      return outcome;
    });
    guarded.catch(() => undefined); // awaited below; an early return by the caller leaves it unread
    try {
      await Promise.race([admitted, guarded]);
    } catch (err) {
      if (err instanceof BrokenCircuitError) throw closed();
      throw err;
    }

    let ended = false;
    try {
      yield* provider.complete(req, signal);
      ended = true;
      settle();
    } catch (err) {
      ended = true;
      settle(err instanceof Error ? err : new ProviderError('provider_error', `${provider.name} failed`));
    } finally {
      if (!ended) settle(new ProviderError('cancelled', 'the caller stopped reading'));
    }
    await guarded;
  }

  private breakerFor(provider: Provider, model: string): CircuitBreakerPolicy {
    const key = keyOf(provider, model);
    let breaker = this.breakers.get(key);
    if (breaker) {
      // Least recently used first: move it to the end.
      this.breakers.delete(key);
    } else {
      if (this.breakers.size >= this.opts.maxBreakers) this.forgetOne();
      breaker = circuitBreaker(handleWhen(isFault), {
        halfOpenAfter: this.opts.halfOpenAfterMs,
        breaker: new ConsecutiveBreaker(this.opts.threshold),
      });
    }
    this.breakers.set(key, breaker);
    return breaker;
  }

  /** Forgets the least recently used closed breaker (or, if none is closed, the least recently used). */
  private forgetOne(): void {
    for (const [key, b] of this.breakers) {
      if (b.state === CircuitState.Closed) {
        this.breakers.delete(key);
        return;
      }
    }
    const oldest = this.breakers.keys().next();
    if (!oldest.done) this.breakers.delete(oldest.value);
  }
}

function keyOf(provider: Provider, model: string): string {
  return JSON.stringify([provider.name, provider.baseUrl, model]);
}
