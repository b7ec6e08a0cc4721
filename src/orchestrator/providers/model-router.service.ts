import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { MODEL_ID_HINT, routeModel, type ModelProviderName } from '../../config/model-routes.js';
import { AnthropicProvider } from './anthropic.provider.js';
import { OpenAiCompatibleProvider } from './openai.provider.js';
import { ProviderBreakers } from './provider-breakers.js';
import { ProviderError, type CompletionEvent, type CompletionRequest, type Provider } from './provider.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { childSpan, fail, SpanKind } from '../../tracing/spans.js';
import { CircuitState } from 'cockatiel';

export type ModelTarget = { kind: 'echo' } | { kind: 'provider'; provider: Provider; model: string };

const MAX_ATTEMPTS = 3;

/** The wait before attempt `attempt + 1` when the provider named none: 250 ms, 500 ms … plus jitter. */
function backoffMs(attempt: number): number {
  return 250 * 2 ** (attempt - 1) + Math.floor(Math.random() * 100);
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
  private readonly breakers = new ProviderBreakers();

  constructor(
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    metrics.onCollect(metrics.breakerState, (g) => {
      for (const b of this.breakers.states()) {
        const value =
          b.state === CircuitState.Open || b.state === CircuitState.Isolated
            ? 1
            : b.state === CircuitState.HalfOpen
              ? 0.5
              : 0;
        g.set({ provider: b.provider, model: metrics.model(b.model) }, value);
      }
    });
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
   * Streams a completion under the model's circuit breaker, retrying 429s,
   * 5xx, timeouts, connection failures and cut-off streams — at most
   * `MAX_ATTEMPTS` in all, and only while no text has reached the caller. A
   * wait the provider asked for (`Retry-After`, `retry-after-ms`) is honoured
   * up to `MAX_RETRY_AFTER_MS`; cancellation ends any wait at once.
   */
  async *stream(provider: Provider, req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const model = this.metrics.model(req.model);
    for (let attempt = 1; ; attempt++) {
      let streamed = false;
      const started = performance.now();
      const done = (outcome: string): void => {
        this.metrics.modelCalls.inc({ provider: provider.name, model, outcome });
        this.metrics.modelLatency.observe({ provider: provider.name, outcome }, (performance.now() - started) / 1000);
      };
      try {
        for await (const ev of this.traced(provider, req, signal, attempt)) {
          if (ev.type === 'text') streamed = true;
          if (ev.type === 'usage') {
            this.metrics.modelTokens.inc({ provider: provider.name, model, direction: 'input' }, ev.inputTokens);
            this.metrics.modelTokens.inc({ provider: provider.name, model, direction: 'output' }, ev.outputTokens);
          }
          yield ev;
        }
        done('ok');
        return;
      } catch (err) {
        done(err instanceof ProviderError ? err.code : signal.aborted ? 'cancelled' : 'provider_error');
        const e =
          signal.aborted || (err instanceof ProviderError && err.code === 'cancelled')
            ? new ProviderError('cancelled', 'the run was cancelled')
            : err instanceof ProviderError
              ? err
              : new ProviderError('provider_error', `${provider.name} failed`);
        if (e.code === 'cancelled' || !e.retryable || streamed || attempt >= MAX_ATTEMPTS) throw e;
        await sleep(e.retryAfterMs ?? backoffMs(attempt), undefined, { signal }).catch(() => {
          throw new ProviderError('cancelled', 'the run was cancelled');
        });
      }
    }
  }

  /**
   * One attempt under the model's breaker, traced: a client span per attempt
   * with the GenAI semantic attributes, active while the provider's stream is
   * read. The caller still drives the stream (each read happens when it asks
   * for the next event), and stopping early closes the provider's stream.
   */
  private async *traced(
    provider: Provider,
    req: CompletionRequest,
    signal: AbortSignal,
    attempt: number,
  ): AsyncGenerator<CompletionEvent> {
    const { span, within } = childSpan(`chat ${req.model}`, SpanKind.CLIENT, {
      'gen_ai.system': provider.name,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': req.model,
      'arbiter.attempt': attempt,
    });
    const it = this.breakers.call(provider, req, signal);
    let finished = false;
    try {
      for (;;) {
        const r = await within(() => it.next());
        if (r.done) break;
        if (r.value.type === 'usage') {
          span.setAttributes({
            'gen_ai.usage.input_tokens': r.value.inputTokens,
            'gen_ai.usage.output_tokens': r.value.outputTokens,
          });
        }
        yield r.value;
      }
      finished = true;
    } catch (err) {
      finished = true;
      fail(span, err, err instanceof ProviderError ? err.code : 'provider_error');
      throw err;
    } finally {
      // The caller stopped reading: close the provider's stream (the breaker counts it as neither).
      if (!finished) await within(() => it.return(undefined)).catch(() => undefined);
      span.end();
    }
  }
}
