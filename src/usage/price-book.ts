import { MODEL_PROVIDERS } from '../config/model-routes.js';

/** The most a price may be, per million tokens: anything above is a typo (a price per token, say). */
export const MAX_PRICE_PER_MILLION = 10_000;
/** How many entries a prices file may hold. */
const MAX_ENTRIES = 10_000;

/** Prices of one model (or model pattern) over one period, per million tokens. */
export interface PriceEntry {
  /** As written in the file: `<provider>/<model>`, a bare `<model>`, either with `*` wildcards. */
  key: string;
  provider: string | null;
  pattern: RegExp;
  /** Exact names rank above patterns; among patterns, the longer literal text ranks higher. */
  rank: number;
  input: number;
  output: number;
  cached: number;
  from: number;
  until: number;
  /** `effective_until` was given (else the entry ends where the next one of its key starts). */
  bounded: boolean;
}

/** The prices of a call (per million tokens) and their currency: what the ledger row is costed with. */
export interface CallPrice {
  input: number;
  output: number;
  cached: number;
  currency: string;
}

export class PriceFileError extends Error {}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;
const ENTRY_KEYS = new Set([
  'model',
  'input_per_million',
  'output_per_million',
  'cached_per_million',
  'effective_from',
  'effective_until',
]);

/**
 * Operator prices, checked whole at start: per model id or pattern, per
 * million input, output and cached input tokens, in one currency, each over
 * a period (`effective_from` inclusive, `effective_until` exclusive) so that
 * a new price applies to calls from its date on and the ledger keeps what
 * earlier calls cost. `lookup` picks the most specific entry in force.
 */
export class PriceBook {
  private constructor(
    readonly currency: string | null,
    private readonly entries: readonly PriceEntry[],
  ) {}

  static empty(): PriceBook {
    return new PriceBook(null, []);
  }

  /** Parses a prices file's JSON; a bad file throws `PriceFileError` naming the entry and the field. */
  static parse(json: unknown): PriceBook {
    if (!isRecord(json)) throw new PriceFileError('must hold a JSON object {"currency": …, "prices": […]}');
    const currency = json.currency;
    if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
      throw new PriceFileError('currency: must be an ISO 4217 code of three capital letters, e.g. "USD"');
    }
    const unknown = Object.keys(json).filter((k) => k !== 'currency' && k !== 'prices');
    if (unknown.length) throw new PriceFileError(`${unknown[0]}: unknown field (expected currency, prices)`);
    const list = json.prices;
    if (!Array.isArray(list)) throw new PriceFileError('prices: must be an array of entries');
    if (list.length > MAX_ENTRIES) throw new PriceFileError(`prices: at most ${MAX_ENTRIES} entries`);
    const entries = list.map((e, i) => entryOf(e, i));
    checkOverlaps(entries);
    return new PriceBook(currency, entries);
  }

  get size(): number {
    return this.entries.length;
  }

  /** The price of a call of `provider`'s `model` made at `at` (ms), or null when none is configured. */
  lookup(provider: string, model: string, at: number): CallPrice | null {
    let best: PriceEntry | undefined;
    for (const e of this.entries) {
      if (at < e.from || at >= e.until) continue;
      if (e.provider !== null && e.provider !== provider) continue;
      if (!e.pattern.test(model)) continue;
      if (!best || e.rank > best.rank) best = e;
    }
    if (!best || !this.currency) return null;
    return { input: best.input, output: best.output, cached: best.cached, currency: this.currency };
  }
}

function entryOf(raw: unknown, i: number): PriceEntry {
  const fail = (field: string, msg: string): never => {
    throw new PriceFileError(`prices[${i}]: ${field}: ${msg}`);
  };
  if (!isRecord(raw)) return fail('entry', 'must be an object');
  for (const k of Object.keys(raw)) if (!ENTRY_KEYS.has(k)) fail(k, 'unknown field');
  const key = raw.model;
  if (typeof key !== 'string' || !/^[A-Za-z0-9*][A-Za-z0-9._:/@+*-]{0,159}$/.test(key)) {
    return fail('model', 'must be a model id, "<provider>/<model>", or a pattern with * (e.g. "openai/gpt-4o*")');
  }
  const price = (field: string, required: boolean): number | undefined => {
    const v = raw[field];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(field, 'must be a number');
    if (v < 0) return fail(field, 'must not be negative');
    if (v > MAX_PRICE_PER_MILLION) return fail(field, `must be at most ${MAX_PRICE_PER_MILLION} per million tokens`);
    return v;
  };
  const date = (field: string, fallback: number): number => {
    const v = raw[field];
    if (v === undefined) return fallback;
    const t = typeof v === 'string' && DATE.test(v) ? Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v) : NaN;
    return Number.isNaN(t) ? fail(field, 'must be a date, "YYYY-MM-DD" (UTC) or an ISO 8601 time') : t;
  };
  const input = price('input_per_million', true) as number;
  const output = price('output_per_million', true) as number;
  const cached = price('cached_per_million', false) ?? input;
  const from = date('effective_from', -Infinity);
  const until = date('effective_until', Infinity);
  if (until <= from) fail('effective_until', 'must be after effective_from');
  const slash = key.indexOf('/');
  const prefix = slash > 0 ? key.slice(0, slash) : '';
  const provider = (MODEL_PROVIDERS as readonly string[]).includes(prefix) ? prefix : null;
  const name = provider ? key.slice(slash + 1) : key;
  if (!name) fail('model', 'names no model after the provider');
  const literal = name.replaceAll('*', '');
  const exact = !name.includes('*');
  const source = name
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  // Exact beats pattern, a provider's entry beats an any-provider one, then the longer literal.
  const rank = (exact ? 1_000_000 : 0) + (provider ? 100_000 : 0) + literal.length;
  const bounded = raw.effective_until !== undefined;
  return { key, provider, pattern: new RegExp(`^${source}$`), rank, input, output, cached, from, until, bounded };
}

/**
 * Two entries for the same model key may not be in force at the same time:
 * an entry without `effective_until` ends where the next one starts (a
 * price change), one with it must end by then, and two may not start at once.
 */
function checkOverlaps(entries: PriceEntry[]): void {
  const byKey = new Map<string, { e: PriceEntry; i: number }[]>();
  entries.forEach((e, i) => byKey.set(e.key, [...(byKey.get(e.key) ?? []), { e, i }]));
  for (const [key, list] of byKey) {
    const sorted = [...list].sort((a, b) => a.e.from - b.e.from);
    for (let k = 1; k < sorted.length; k++) {
      const prev = sorted[k - 1];
      const cur = sorted[k];
      if (!prev.e.bounded && cur.e.from > prev.e.from) prev.e.until = cur.e.from;
      if (cur.e.from < prev.e.until) {
        throw new PriceFileError(
          `prices[${cur.i}]: effective_from: the period of "${key}" overlaps that of prices[${prev.i}]` +
            ' (give the earlier entry an effective_until at or before this date)',
        );
      }
    }
  }
}
