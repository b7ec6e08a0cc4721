import { tokenCount } from '../../usage/usage-call.js';
import { parseChunk, postSse } from './http-stream.js';
import { ProviderError, type CompletionEvent, type CompletionRequest, type Provider } from './provider.js';

const documentedType = (type: unknown): string | undefined =>
  typeof type === 'string' && ERROR_TYPES.has(type) ? type : undefined;

/** The error types of Anthropic's API (its errors page); a stream's error names one of them, or is "an error". */
const ERROR_TYPES: ReadonlySet<string> = new Set([
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'overloaded_error',
]);

interface AnthropicEvent {
  type?: unknown;
  message?: {
    usage?: {
      input_tokens?: unknown;
      output_tokens?: unknown;
      cache_read_input_tokens?: unknown;
      cache_creation_input_tokens?: unknown;
    };
  };
  delta?: { type?: unknown; text?: unknown; stop_reason?: unknown };
  usage?: { output_tokens?: unknown };
  error?: { type?: unknown };
}

/** Anthropic Messages API, streamed (server-sent events). */
export class AnthropicProvider implements Provider {
  readonly name = 'anthropic';

  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly timeoutMs: number,
  ) {}

  async *complete(req: CompletionRequest, signal: AbortSignal): AsyncGenerator<CompletionEvent> {
    const body = {
      model: req.model,
      system: req.system,
      messages: req.messages,
      max_tokens: req.maxTokens,
      temperature: Math.min(req.temperature, 1),
      stream: true,
    };
    const headers = { 'x-api-key': this.apiKey, 'anthropic-version': '2023-06-01' };
    const url = `${this.baseUrl.replace(/\/+$/, '')}/v1/messages`;
    // Anthropic counts cache reads and writes apart from `input_tokens`; Arbiter's input counts them all.
    let input = 0;
    let cached = 0;
    let output = 0;
    for await (const { data } of postSse(this.name, url, headers, body, signal, this.timeoutMs)) {
      const ev = (parseChunk(this.name, data) ?? {}) as AnthropicEvent;
      switch (ev.type) {
        case 'message_start': {
          const u = ev.message?.usage;
          cached = tokenCount(u?.cache_read_input_tokens);
          input = tokenCount(u?.input_tokens) + cached + tokenCount(u?.cache_creation_input_tokens);
          output = tokenCount(u?.output_tokens);
          break;
        }
        case 'content_block_delta':
          if (ev.delta?.type === 'text_delta') {
            if (typeof ev.delta.text !== 'string') {
              throw new ProviderError('provider_error', 'anthropic sent a malformed stream chunk');
            }
            yield { type: 'text', delta: ev.delta.text };
          }
          break;
        case 'message_delta':
          if (ev.usage?.output_tokens !== undefined) output = tokenCount(ev.usage.output_tokens);
          if (typeof ev.delta?.stop_reason === 'string') yield { type: 'stop', reason: ev.delta.stop_reason };
          break;
        case 'message_stop':
          yield { type: 'usage', inputTokens: input, outputTokens: output, cachedTokens: cached };
          return;
        case 'error':
          throw new ProviderError(
            ev.error?.type === 'overloaded_error' ? 'provider_unavailable' : 'provider_error',
            // Only a type Anthropic documents is named: anything else the stream says could echo what it was sent.
            `anthropic reported ${documentedType(ev.error?.type) ?? 'an error'} mid-stream`,
            ev.error?.type === 'overloaded_error',
          );
        default:
          break; // ping, content_block_start/stop
      }
    }
    throw new ProviderError('provider_error', 'anthropic ended the stream without message_stop', true);
  }
}
