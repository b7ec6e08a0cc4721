import { tokenCount } from '../../usage/usage-call.js';
import { parseChunk, postSse } from './http-stream.js';
import { ProviderError, type CompletionEvent, type CompletionRequest, type Provider } from './provider.js';

interface Chunk {
  choices?: { delta?: { content?: unknown }; finish_reason?: unknown }[];
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown };
  } | null;
  error?: unknown;
}

/**
 * OpenAI's reasoning models — the o-series (o1, o3, o4-mini …) and the gpt-5
 * family — refuse `max_tokens` (they take `max_completion_tokens`, which
 * also budgets the hidden reasoning tokens) and any `temperature` but the
 * default 1.
 */
export function isOpenAiReasoningModel(model: string): boolean {
  return /^(o\d|gpt-5)/.test(model);
}

/** The Chat Completions request body for `req` (streamed, with usage in the last chunk). */
export function chatCompletionsBody(req: CompletionRequest): Record<string, unknown> {
  const reasoning = isOpenAiReasoningModel(req.model);
  return {
    model: req.model,
    messages: [{ role: 'system', content: req.system }, ...req.messages],
    ...(reasoning
      ? { max_completion_tokens: req.maxTokens }
      : { max_tokens: req.maxTokens, temperature: req.temperature }),
    stream: true,
    stream_options: { include_usage: true },
  };
}

/**
 * OpenAI-compatible Chat Completions, streamed (`stream: true`): OpenAI,
 * Ollama, vLLM, llama.cpp server, OpenRouter.
 */
export class OpenAiCompatibleProvider implements Provider {
  constructor(
    readonly name: string,
    readonly baseUrl: string,
    private readonly apiKey: string | undefined,
    private readonly timeoutMs: number,
  ) {}

  async *complete(req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const headers: Record<string, string> = this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
    const url = `${this.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    // A stream ends with a choice's finish_reason and then `data: [DONE]`. Some
    // compatible servers send only one of the two; a stream with neither was cut off.
    let ended = false;
    for await (const { data } of postSse(this.name, url, headers, chatCompletionsBody(req), signal, this.timeoutMs)) {
      if (data === '[DONE]') {
        ended = true;
        break;
      }
      const chunk = (parseChunk(this.name, data) ?? {}) as Chunk;
      if (chunk.error) throw new ProviderError('provider_error', `${this.name} reported an error mid-stream`);
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      const content = choice?.delta?.content;
      if (content !== undefined && content !== null && typeof content !== 'string') {
        throw new ProviderError('provider_error', `${this.name} sent a malformed stream chunk`);
      }
      if (content) yield { type: 'text', delta: content };
      const finish = choice?.finish_reason;
      if (typeof finish === 'string' && finish) {
        ended = true;
        yield { type: 'stop', reason: finish };
      }
      const u = chunk.usage;
      if (u && typeof u === 'object') {
        // Counts that are absent, negative or not whole numbers are recorded as 0 (`tokenCount`).
        const cached = tokenCount(u.prompt_tokens_details?.cached_tokens);
        yield {
          type: 'usage',
          inputTokens: tokenCount(u.prompt_tokens),
          outputTokens: tokenCount(u.completion_tokens),
          cachedTokens: cached,
        };
      }
    }
    if (!ended) {
      // Retryable: ModelRouter retries only while no text has reached the caller.
      throw new ProviderError(
        'provider_error',
        `${this.name} ended the stream early (no finish_reason, no [DONE])`,
        true,
      );
    }
  }
}
