/**
 * Which provider serves a model id: the one table read by the config check of
 * `ARBITER_DEFAULT_MODEL` at start and by the orchestrator's model router.
 */

/** The model providers Arbiter can call (each has its variables in `AppConfig`). */
export const MODEL_PROVIDERS = ['anthropic', 'openai', 'ollama', 'openrouter'] as const;
export type ModelProviderName = (typeof MODEL_PROVIDERS)[number];

/** Bare model names that route without a `<provider>/` prefix. */
const BARE_MODEL_PATTERNS: readonly { pattern: RegExp; provider: ModelProviderName }[] = [
  { pattern: /^claude-/, provider: 'anthropic' },
  { pattern: /^gpt-/, provider: 'openai' },
  { pattern: /^o\d/, provider: 'openai' },
];

/** The characters and length a model id may have (the same rule as an agent's `model`). */
export const MODEL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/;

/** What a model id may look like, for error messages. */
export const MODEL_ID_HINT =
  'echo, anthropic/<model>, openai/<model>, ollama/<model>, openrouter/<model>, or a model name starting with claude-, gpt- or o<digit>';

export type ModelRoute = { kind: 'echo' } | { kind: 'provider'; provider: ModelProviderName; model: string };

function isProviderName(name: string): name is ModelProviderName {
  return (MODEL_PROVIDERS as readonly string[]).includes(name);
}

/**
 * Routes a model id: `echo`; `<provider>/<model>` (the provider's own name
 * follows the first slash and may contain more); or a bare name matching one
 * of the patterns above. `null` when no provider serves it.
 */
export function routeModel(id: string): ModelRoute | null {
  if (id === 'echo') return { kind: 'echo' };
  const slash = id.indexOf('/');
  if (slash > 0) {
    const prefix = id.slice(0, slash);
    const model = id.slice(slash + 1);
    return isProviderName(prefix) && model ? { kind: 'provider', provider: prefix, model } : null;
  }
  const bare = BARE_MODEL_PATTERNS.find((p) => p.pattern.test(id));
  return bare ? { kind: 'provider', provider: bare.provider, model: id } : null;
}
