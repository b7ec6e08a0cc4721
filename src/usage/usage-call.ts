import type { CallPrice } from './price-book.js';

/** The most tokens one call may report; a larger count is taken for garbage and recorded as 0. */
export const MAX_CALL_TOKENS = 1_000_000_000;

/**
 * A token count a provider reported, as Arbiter records it: a whole number
 * from 0 to `MAX_CALL_TOKENS`; anything else (absent, negative, fractional,
 * not a number) is 0 — a provider's bad report never fails a run.
 */
export function tokenCount(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_CALL_TOKENS ? v : 0;
}

/** One model call's usage as the orchestrator reports it (`cachedTokens` are part of `inputTokens`). */
export interface ModelCallUsage {
  /** The agent whose turn made the call (a sub-agent's id for a delegated turn). */
  agent: string;
  provider: string;
  /** The provider's own model name. */
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/**
 * A call as the ledger records it (snake_case: a row of the statement's
 * `jsonb_to_recordset`), with the prices in force when it was made; the
 * statement computes the cost from them in exact decimal arithmetic.
 */
export interface AccountedCall {
  agent: string;
  provider: string;
  model: string;
  input: number;
  output: number;
  cached: number;
  price_in: number | null;
  price_out: number | null;
  price_cached: number | null;
  currency: string | null;
}

/** The ledger record of `call` priced at `price` (null: unpriced). Counts are checked again here. */
export function accountedCall(call: ModelCallUsage, price: CallPrice | null): AccountedCall {
  const input = tokenCount(call.inputTokens);
  return {
    agent: call.agent,
    provider: call.provider,
    model: call.model,
    input,
    output: tokenCount(call.outputTokens),
    cached: Math.min(tokenCount(call.cachedTokens), input),
    price_in: price?.input ?? null,
    price_out: price?.output ?? null,
    price_cached: price?.cached ?? null,
    currency: price?.currency ?? null,
  };
}

/** The cost of an accounted call as a float (for the metrics; the ledger computes it exactly). */
export function callCost(c: AccountedCall): number {
  if (c.price_in === null || c.price_out === null || c.price_cached === null) return 0;
  return ((c.input - c.cached) * c.price_in + c.cached * c.price_cached + c.output * c.price_out) / 1e6;
}
