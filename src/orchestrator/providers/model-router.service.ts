import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { MODEL_ID_HINT, routeModel, type ModelProviderName } from '../../config/model-routes.js';
import { AnthropicProvider } from './anthropic.provider.js';
import { OpenAiCompatibleProvider } from './openai.provider.js';
import { ProviderError, type CompletionEvent, type CompletionRequest, type Provider } from './provider.js';

export type ModelTarget = { kind: 'echo' } | { kind: 'provider'; provider: Provider; model: string };

const MAX_ATTEMPTS = 3;
const BREAKER_THRESHOLD = 5;
const BREAKER_OPEN_MS = 30_000;

/** Per-provider circuit breaker: after consecutive failures, fail fast for a while. */
class Breaker {
  private failures = 0;
  private openUntil = 0;

  check(name: string): void {
    if (Date.now() < this.openUntil) {
      throw new ProviderError('provider_unavailable', `${name} is failing; not calling it for a while`);
    }
  }

  success(): void {
    this.failures = 0;
  }

  failure(): void {
    this.failures++;
    if (this.failures >= BREAKER_THRESHOLD) {
      this.openUntil = Date.now() + BREAKER_OPEN_MS;
      this.failures = 0;
    }
  }
}

/**
 * Model routing by the table in `config/model-routes.ts` (the same one the
 * config check of `ARBITER_DEFAULT_MODEL` uses): `anthropic/` or `claude-` →
 * Anthropic; `openai/`, `gpt-` or `o<digit>` → OpenAI (or any
 * OpenAI-compatible server at `OPENAI_BASE_URL`); `ollama/` → `OLLAMA_HOST`;
 * `openrouter/` → `OPENROUTER_BASE_URL`; `echo` → the offline placeholder.
 */
@Injectable()
export class ModelRouter {
  private readonly providers = new Map<ModelProviderName, Provider>();
  private readonly breakers = new Map<string, Breaker>();

  constructor(private readonly config: AppConfig) {
    const t = config.providerTimeoutMs;
    if (config.anthropicApiKey) {
      this.providers.set('anthropic', new AnthropicProvider(config.anthropicBaseUrl, config.anthropicApiKey, t));
    }
    if (config.openaiApiKey || config.openaiBaseUrl) {
      this.providers.set(
        'openai',
        new OpenAiCompatibleProvider(
          'openai',
          config.openaiBaseUrl ?? 'https://api.openai.com/v1',
          config.openaiApiKey,
          t,
        ),
      );
    }
    this.providers.set('ollama', new OpenAiCompatibleProvider('ollama', config.ollamaHost, undefined, t));
    if (config.openrouterApiKey) {
      this.providers.set(
        'openrouter',
        new OpenAiCompatibleProvider('openrouter', config.openrouterBaseUrl, config.openrouterApiKey, t),
      );
    }
  }

  /** Provider names that are configured (ollama needs no key; echo is always there). */
  configured(): string[] {
    return ['echo', ...this.providers.keys()];
  }

  resolve(model: string | null): ModelTarget {
    const id = model ?? this.config.defaultModel;
    const route = routeModel(id);
    if (!route) {
      throw new ProviderError(
        'model_unavailable',
        `unknown model '${id}'; use ${MODEL_ID_HINT}; configured: ${this.configured().join(', ')}`,
      );
    }
    if (route.kind === 'echo') return route;
    const provider = this.providers.get(route.provider);
    if (!provider) {
      throw new ProviderError(
        'model_unavailable',
        `model '${id}' needs the ${route.provider} provider, which is not configured; configured: ${this.configured().join(', ')}`,
      );
    }
    return { kind: 'provider', provider, model: route.model };
  }

  /**
   * Streams a completion, retrying with backoff on 429, 5xx, timeouts and
   * connection failures — only while no text has reached the caller.
   */
  async *stream(provider: Provider, req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const breaker = this.breakerFor(provider.name);
    for (let attempt = 1; ; attempt++) {
      breaker.check(provider.name);
      let streamed = false;
      try {
        for await (const ev of provider.complete(req, signal)) {
          if (ev.type === 'text') streamed = true;
          yield ev;
        }
        breaker.success();
        return;
      } catch (err) {
        const e =
          err instanceof ProviderError
            ? err
            : signal.aborted
              ? new ProviderError('cancelled', 'the run was cancelled')
              : new ProviderError('provider_error', `${provider.name} failed`);
        if (e.code === 'cancelled') throw e;
        if (e.retryable || e.code === 'auth_failed') breaker.failure();
        if (!e.retryable || streamed || attempt >= MAX_ATTEMPTS) throw e;
        const backoff = e.retryAfterMs ?? 250 * 2 ** (attempt - 1) + Math.floor(Math.random() * 100);
        await sleep(backoff, undefined, { signal }).catch(() => {
          throw new ProviderError('cancelled', 'the run was cancelled');
        });
      }
    }
  }

  private breakerFor(name: string): Breaker {
    let b = this.breakers.get(name);
    if (!b) {
      b = new Breaker();
      this.breakers.set(name, b);
    }
    return b;
  }
}
