import { DurationEnv, IntEnv, ModelEnv, TextEnv, UrlEnv } from './setting.decorators.js';

/** The models agents run on, their providers, and how much one turn may do. */
export class ModelSettings {
  /**
   * The model of agents whose constitution sets none: `echo`, `anthropic/…`, `openai/…`, `ollama/…`,
   * `openrouter/…`, or a bare `claude-…`, `gpt-…`, `o1…` name; anything else (e.g. `foo/bar`) stops the start with
   * exit code 2.
   */
  @ModelEnv('ARBITER_DEFAULT_MODEL') defaultModel = 'echo';

  /** Enables `anthropic/<model>` and `claude-*`. */
  @TextEnv('ANTHROPIC_API_KEY', { minLength: 8, secret: true }) anthropicApiKey?: string;

  /** Anthropic Messages API base. */
  @UrlEnv('ANTHROPIC_BASE_URL', 'http') anthropicBaseUrl = 'https://api.anthropic.com';

  /** Enables `openai/<model>`, `gpt-*`, `o1…`. */
  @TextEnv('OPENAI_API_KEY', { secret: true }) openaiApiKey?: string;

  /**
   * Any OpenAI-compatible server (vLLM, llama.cpp server …); setting it alone enables the provider without a key.
   * @default `https://api.openai.com/v1`
   */
  @UrlEnv('OPENAI_BASE_URL', 'http') openaiBaseUrl?: string;

  /** Where `ollama/<model>` goes. */
  @UrlEnv('OLLAMA_HOST', 'http') ollamaHost = 'http://localhost:11434/v1';

  /** Enables `openrouter/<model>`. */
  @TextEnv('OPENROUTER_API_KEY', { secret: true }) openrouterApiKey?: string;

  /** Where `openrouter/<model>` goes (any OpenRouter-compatible gateway). */
  @UrlEnv('OPENROUTER_BASE_URL', 'http') openrouterBaseUrl = 'https://openrouter.ai/api/v1';

  /**
   * A JSON file of model prices (per million input, output and cached tokens, one currency, with the dates they
   * apply from): each model call's cost is computed with them when it is accounted; a bad file stops the start,
   * naming the entry and field. See [Usage and costs](usage.md).
   * @default unset → calls are accounted in tokens, without a cost
   */
  @TextEnv('ARBITER_PRICES_FILE', { allowed: 'a file path' }) pricesFile?: string;

  /** One model call attempt's timeout. */
  @DurationEnv('ARBITER_PROVIDER_TIMEOUT_MS', 1000, 3_600_000) providerTimeoutMs = 120_000;

  /** The offline `echo` model: chunks per reply. */
  @IntEnv('ARBITER_ECHO_CHUNKS', 1, 64) echoChunks = 4;

  /** The offline `echo` model: delay before each chunk. */
  @DurationEnv('ARBITER_ECHO_DELAY_MS', 0, 10_000) echoDelayMs = 15;

  /**
   * Model calls one agent turn may make (each round of tool results is one more); commands left in the last
   * response are answered `ERR: turn limit reached`.
   */
  @IntEnv('ARBITER_MAX_MODEL_CALLS', 1, 50) maxModelCalls = 6;

  /** How deep `/agent` may nest below the agent the request named. */
  @IntEnv('ARBITER_MAX_DELEGATION_DEPTH', 0, 8) maxDelegationDepth = 2;
}
