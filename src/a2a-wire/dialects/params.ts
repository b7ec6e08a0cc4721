import { A2aError } from '../a2a-errors.js';

/** Small readers for untrusted JSON params; each failure names its field. */
export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function obj(v: unknown, field: string): Json {
  if (!isObject(v)) throw A2aError.invalidParams(field, 'must be an object');
  return v;
}

export function optObj(v: unknown, field: string): Json | undefined {
  return v === undefined || v === null ? undefined : obj(v, field);
}

export function str(v: unknown, field: string, max = 256): string {
  if (typeof v !== 'string' || v.length === 0)
    throw A2aError.invalidParams(field, 'is required and must be a non-empty string');
  if (v.length > max) throw A2aError.invalidParams(field, `must be at most ${max} characters`);
  return v;
}

export function optStr(v: unknown, field: string, max = 256): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw A2aError.invalidParams(field, 'must be a string');
  if (v.length > max) throw A2aError.invalidParams(field, `must be at most ${max} characters`);
  return v;
}

export function optBool(v: unknown, field: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw A2aError.invalidParams(field, 'must be a boolean');
  return v;
}

/**
 * An optional integer. `numericStrings`: also a decimal string, as ProtoJSON
 * allows for int32 (v1.0); v0.3's JSON Schema says integer, and means it.
 */
export function optInt(
  v: unknown,
  field: string,
  min: number,
  max: number,
  numericStrings = false,
): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = numericStrings && typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw A2aError.invalidParams(field, `must be an integer between ${min} and ${max}`);
  }
  return n;
}

export function optStrArray(v: unknown, field: string, maxItems = 64): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > maxItems || v.some((x) => typeof x !== 'string' || x.length > 256)) {
    throw A2aError.invalidParams(field, `must be an array of at most ${maxItems} strings`);
  }
  return v as string[];
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/i;

/**
 * An optional RFC 3339 timestamp with its offset (`Z` or `±hh:mm`), years 0001
 * to 9999, every field in range. Anything else — an empty string, a missing
 * offset, year 0000, February 30th — is InvalidParams, never a database error.
 */
export function optTimestamp(v: unknown, field: string): Date | undefined {
  if (v === undefined || v === null) return undefined;
  const bad = (): never => {
    throw A2aError.invalidParams(field, 'must be an RFC 3339 timestamp with an offset, e.g. 2026-01-31T12:00:00Z');
  };
  const m = typeof v === 'string' ? RFC3339.exec(v) : null;
  if (!m) return bad();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  const d = new Date(v as string);
  const sameDay = new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;
  if (year < 1 || month < 1 || month > 12 || !sameDay || hour > 23 || minute > 59 || second > 59 || !offsetOk) bad();
  if (Number.isNaN(d.getTime())) bad();
  return d;
}
