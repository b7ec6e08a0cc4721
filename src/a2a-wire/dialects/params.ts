import { A2aError } from '../a2a-errors.js';
import { storableTime } from '../../common/iso-time.js';

/** Small readers for untrusted JSON params; each failure names its field. */
export type Json = Record<string, unknown>;

/** Longest string (or key name) a refusal repeats; longer ones are only described. */
const MAX_QUOTED = 32;
/** Key names a refusal lists before it only counts the rest. */
const MAX_KEYS = 5;
/** A value that reads like an enum or an id token: no spaces, quotes or control characters. */
const ENUM_LIKE = /^[A-Za-z0-9_.:/+-]+$/;

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

/** A key name as a refusal lists it: printable ASCII, at most `MAX_QUOTED` characters. */
function keyName(k: string): string {
  const shown = k.slice(0, MAX_QUOTED).replace(/[^\x20-\x7e]/g, '?');
  return k.length > MAX_QUOTED ? `${shown}…` : shown;
}

/**
 * What a refused value was, without repeating it: its type, an array's
 * length, or an object's first key names (never its values, which may hold a
 * document or a secret). For fields whose value may be sensitive.
 */
export function shapeOf(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${plural(v.length, 'item')}`;
  if (typeof v === 'string') return v === '' ? 'an empty string' : `a string of ${plural(v.length, 'character')}`;
  if (typeof v !== 'object') return `a ${typeof v}`;
  const keys = Object.keys(v);
  if (keys.length === 0) return 'an empty object';
  const more = keys.length > MAX_KEYS ? `, … (${keys.length} keys)` : '';
  return `keys: ${keys.slice(0, MAX_KEYS).map(keyName).join(', ')}${more}`;
}

/**
 * What a refused value was, for enum-like fields (a role, a kind, a state, a
 * count): a short token-like string quoted, a number or boolean as is, else
 * only its shape (see `shapeOf`).
 */
export function got(v: unknown): string {
  if (typeof v === 'string' && v.length <= MAX_QUOTED && ENUM_LIKE.test(v)) return JSON.stringify(v);
  if (typeof v === 'boolean' || (typeof v === 'number' && String(v).length <= MAX_QUOTED)) return String(v);
  return shapeOf(v);
}

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function obj(v: unknown, field: string): Json {
  if (!isObject(v)) throw A2aError.invalidParams(field, `must be an object (got ${shapeOf(v)})`);
  return v;
}

export function optObj(v: unknown, field: string): Json | undefined {
  return v === undefined || v === null ? undefined : obj(v, field);
}

export function str(v: unknown, field: string, max = 256): string {
  if (typeof v !== 'string' || v.length === 0)
    throw A2aError.invalidParams(field, `is required and must be a non-empty string (got ${shapeOf(v)})`);
  if (v.length > max) throw A2aError.invalidParams(field, `must be at most ${max} characters`);
  return v;
}

export function optStr(v: unknown, field: string, max = 256): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw A2aError.invalidParams(field, `must be a string (got ${shapeOf(v)})`);
  if (v.length > max) throw A2aError.invalidParams(field, `must be at most ${max} characters`);
  return v;
}

export function optBool(v: unknown, field: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw A2aError.invalidParams(field, `must be a boolean (got ${got(v)})`);
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
    throw A2aError.invalidParams(field, `must be an integer between ${min} and ${max} (got ${got(v)})`);
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
 * to 9999 as written and in UTC, every field in range. Anything else — an empty
 * string, a missing offset, year 0000, February 30th, 9999-12-31T23:00:00-14:00 —
 * is InvalidParams, never a database error.
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
  if (!storableTime(d.getTime())) bad();
  return d;
}
