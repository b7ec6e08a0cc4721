import type { FieldError } from '../common/errors.js';

/**
 * The budgets a tenant or an agent may have. Tokens are input + output tokens (cached ones are input); requests
 * are the messages sent to the agent (each new task or continuation taken counts one).
 */
export const BUDGET_KEYS = [
  'tokens_per_day',
  'tokens_per_month',
  'cost_per_day',
  'cost_per_month',
  'requests_per_day',
  'requests_per_month',
] as const;
export type BudgetKey = (typeof BUDGET_KEYS)[number];

/** A budget's limits: null (or absent) for none. Costs are in the prices file's currency. */
export type BudgetLimits = Record<BudgetKey, number | null>;

export const NO_LIMITS: BudgetLimits = {
  tokens_per_day: null,
  tokens_per_month: null,
  cost_per_day: null,
  cost_per_month: null,
  requests_per_day: null,
  requests_per_month: null,
};

export const MAX_TOKENS_LIMIT = 1_000_000_000_000;
export const MAX_REQUESTS_LIMIT = 1_000_000_000;
export const MIN_COST_LIMIT = 0.000001;
export const MAX_COST_LIMIT = 1_000_000_000;

/** What a budget counts. */
export type Measure = 'tokens' | 'cost' | 'requests';
export const measureOf = (k: BudgetKey): Measure =>
  k.startsWith('tokens_') ? 'tokens' : k.startsWith('cost_') ? 'cost' : 'requests';
/** Counted in whole units (tokens, requests), not an amount of money. */
export const isCountKey = (k: BudgetKey): boolean => measureOf(k) !== 'cost';
/** The budgets of model calls (checked before each one), not of messages taken. */
export const SPEND_KEYS: readonly BudgetKey[] = BUDGET_KEYS.filter((k) => measureOf(k) !== 'requests');
export const periodOf = (k: BudgetKey): 'day' | 'month' => (k.endsWith('_day') ? 'day' : 'month');

/** Whether `l` limits requests (the messages an agent is sent). */
export const hasRequestLimit = (l: BudgetLimits | undefined | null): boolean =>
  !!l && (l.requests_per_day !== null || l.requests_per_month !== null);

export const hasLimits = (l: BudgetLimits | undefined | null): l is BudgetLimits =>
  !!l && BUDGET_KEYS.some((k) => l[k] !== null);

/** What a tenant or agent spent in a period. */
export interface Spent {
  tokens: number;
  cost: number;
  /** Messages sent to the agent (or the tenant's agents). */
  requests: number;
}

export interface PeriodSpend {
  day: Spent;
  month: Spent;
}

export const ZERO_SPEND: PeriodSpend = {
  day: { tokens: 0, cost: 0, requests: 0 },
  month: { tokens: 0, cost: 0, requests: 0 },
};

/** The UTC calendar day and month `now` falls in: each from its start (inclusive) to its reset (exclusive). */
export function periods(now = Date.now()): Record<'day' | 'month', { from: Date; resetsAt: Date }> {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  return {
    day: { from: new Date(Date.UTC(y, m, day)), resetsAt: new Date(Date.UTC(y, m, day + 1)) },
    month: { from: new Date(Date.UTC(y, m, 1)), resetsAt: new Date(Date.UTC(y, m + 1, 1)) },
  };
}

const used = (s: PeriodSpend, k: BudgetKey): number => s[periodOf(k)][measureOf(k)];

/**
 * The first budget of `limits` that `spend` has reached (at or over its limit), or undefined. `keys`: only these
 * (between the model calls of a run, request budgets do not apply: the run's message was taken already).
 */
export function exhausted(
  limits: BudgetLimits,
  spend: PeriodSpend,
  keys: readonly BudgetKey[] = BUDGET_KEYS,
): { key: BudgetKey; used: number; limit: number } | undefined {
  for (const key of keys) {
    const limit = limits[key];
    if (limit === null) continue;
    const u = used(spend, key);
    if (u >= limit) return { key, used: u, limit };
  }
  return undefined;
}

/** Each set budget's used share (0…, 1 = spent). */
export function ratios(limits: BudgetLimits, spend: PeriodSpend): { key: BudgetKey; used: number; ratio: number }[] {
  return BUDGET_KEYS.flatMap((key) => {
    const limit = limits[key];
    if (limit === null || limit <= 0) return [];
    const u = used(spend, key);
    return [{ key, used: u, ratio: u / limit }];
  });
}

/** How a budget is named in messages: "tokens this month", "cost today". */
export function budgetLabel(k: BudgetKey): string {
  return `${measureOf(k)} ${periodOf(k) === 'day' ? 'today' : 'this month'}`;
}

const fmt = (k: BudgetKey, v: number): string => (isCountKey(k) ? String(v) : String(Number(v.toFixed(6))));

/** "budget exhausted for agent research (tokens this month: 1200 of 1000)". */
export function exhaustedMessage(whose: string, e: { key: BudgetKey; used: number; limit: number }): string {
  return `budget exhausted for ${whose} (${budgetLabel(e.key)}: ${fmt(e.key, e.used)} of ${fmt(e.key, e.limit)})`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks a body of budget limits: each key one of `BUDGET_KEYS`, null (none)
 * or a number in range — tokens a whole number from 1 to 10¹², requests from
 * 1 to 10⁹, costs from 0.000001 to 10⁹ (and only with prices configured). Returns the limits
 * given (absent keys left out) and the problems, each naming its field.
 */
export function parseLimits(
  body: unknown,
  opts: { pricesConfigured: boolean; otherKeys?: readonly string[]; prefix?: string },
): { limits: Partial<BudgetLimits>; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const limits: Partial<BudgetLimits> = {};
  const field = (k: string): string => `${opts.prefix ?? ''}${k}`;
  if (!isRecord(body)) {
    return { limits, errors: [{ field: field('body'), messages: ['must be a JSON object of budget limits'] }] };
  }
  for (const [k, v] of Object.entries(body)) {
    if (v === undefined || opts.otherKeys?.includes(k)) continue;
    if (!(BUDGET_KEYS as readonly string[]).includes(k)) {
      errors.push({ field: field(k), messages: [`unknown field (expected ${BUDGET_KEYS.join(', ')})`] });
      continue;
    }
    const key = k as BudgetKey;
    if (v === null) {
      limits[key] = null;
      continue;
    }
    if (isCountKey(key)) {
      const [max, shown] = measureOf(key) === 'tokens' ? [MAX_TOKENS_LIMIT, '10^12'] : [MAX_REQUESTS_LIMIT, '10^9'];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) {
        errors.push({ field: field(k), messages: [`${k} must be null (none) or a whole number from 1 to ${shown}`] });
        continue;
      }
    } else {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < MIN_COST_LIMIT || v > MAX_COST_LIMIT) {
        errors.push({ field: field(k), messages: [`${k} must be null (none) or a number from 0.000001 to 10^9`] });
        continue;
      }
      if (!opts.pricesConfigured) {
        errors.push({
          field: field(k),
          messages: [`${k} needs model prices: the server has no prices file (ARBITER_PRICES_FILE), so costs are 0`],
        });
        continue;
      }
      // Stored with 6 decimals.
      limits[key] = Math.round(v * 1e6) / 1e6;
      continue;
    }
    limits[key] = v;
  }
  return { limits, errors };
}

/**
 * A new budget may not be below what was already spent in its period (it
 * would be exhausted at once), and an agent's may not exceed its tenant's.
 */
export function checkAgainst(
  limits: Partial<BudgetLimits>,
  spend: PeriodSpend,
  ceiling?: BudgetLimits,
  prefix = '',
): FieldError[] {
  const errors: FieldError[] = [];
  for (const key of BUDGET_KEYS) {
    const v = limits[key];
    if (v === undefined || v === null) continue;
    const cap = ceiling?.[key];
    if (cap !== undefined && cap !== null && v > cap) {
      errors.push({
        field: `${prefix}${key}`,
        messages: [`${key} must not exceed the tenant's own ${key} (${fmt(key, cap)})`],
      });
      continue;
    }
    const u = used(spend, key);
    if (v < u) {
      errors.push({
        field: `${prefix}${key}`,
        messages: [
          `${key} must not be below what was already spent ${periodOf(key) === 'day' ? 'today' : 'this month'} (${fmt(key, u)})`,
        ],
      });
    }
  }
  return errors;
}

/** The limits of a stored row (bigint and numeric columns come back as strings). */
export function limitsOfRow(r: {
  tokens_per_day: string | number | null;
  tokens_per_month: string | number | null;
  cost_per_day: string | number | null;
  cost_per_month: string | number | null;
  requests_per_day: string | number | null;
  requests_per_month: string | number | null;
}): BudgetLimits {
  const n = (v: string | number | null): number | null => (v === null ? null : Number(v));
  return {
    tokens_per_day: n(r.tokens_per_day),
    tokens_per_month: n(r.tokens_per_month),
    cost_per_day: n(r.cost_per_day),
    cost_per_month: n(r.cost_per_month),
    requests_per_day: n(r.requests_per_day),
    requests_per_month: n(r.requests_per_month),
  };
}
