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

export function optInt(v: unknown, field: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  // ProtoJSON allows int32 as a JSON number or a decimal string.
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
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

export function optTimestamp(v: unknown, field: string): Date | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const d = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v) ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw A2aError.invalidParams(field, 'must be an RFC 3339 timestamp');
  return d;
}
