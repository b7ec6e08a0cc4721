import type { Dialect } from '../a2a-wire/a2a-errors.js';

/**
 * Spec §3.6: the version comes from the `A2A-Version` header (or the
 * `A2A-Version` query parameter); an empty or absent value means 0.3.
 * Only Major.Minor counts, so `1.0.2` is 1.0; `1` is read as 1.0.
 */
export function negotiateVersion(
  header: string | string[] | undefined,
  query: unknown,
): Dialect | { unsupported: string } {
  const raw = firstString(header) ?? firstString(query);
  const value = (raw ?? '').trim();
  if (value === '') return '0.3';
  if (/^1(\.0(\.\d+)?)?$/.test(value)) return '1.0';
  if (/^0\.3(\.\d+)?$/.test(value)) return '0.3';
  return { unsupported: value.slice(0, 32) };
}

function firstString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}
