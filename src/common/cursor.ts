import { DomainError } from './errors.js';

/** Opaque page cursors: base64url of a small JSON object. */
export function encodeCursor(value: Record<string, string>): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor<K extends string>(
  cursor: string | undefined,
  keys: readonly K[],
): Record<K, string> | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const invalid = DomainError.validation([{ field: 'cursor', messages: ['cursor is not one this server issued'] }]);
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (parsed === null || typeof parsed !== 'object') throw invalid;
  const out = {} as Record<K, string>;
  for (const k of keys) {
    const v = (parsed as Record<string, unknown>)[k];
    if (typeof v !== 'string' || v.length > 200) throw invalid;
    out[k] = v;
  }
  return out;
}
