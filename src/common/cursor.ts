import { DomainError } from './errors.js';
import { storableTime } from './iso-time.js';

/** Opaque page cursors: base64url of a small JSON object. */
export function encodeCursor(value: Record<string, string>): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/** A test of a cursor field's value. */
export interface CursorShape {
  test(value: string): boolean;
}

/** What each cursor field may hold, so a crafted cursor is a 400, never a failed query. */
export const CURSOR_FIELDS = {
  /** A time as the server writes it (`toISOString`), of a day that exists, within years 0001–9999. */
  timestamp: {
    test: (v: string): boolean => {
      // Within those years `toISOString` writes exactly `YYYY-MM-DDTHH:mm:ss.sssZ`: the same text back is the shape.
      const ms = Date.parse(v);
      return storableTime(ms) && new Date(ms).toISOString() === v;
    },
  },
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  bigint: /^[1-9]\d{0,17}$/,
  agentIdOrEmpty: /^[A-Za-z0-9_-]{0,64}$/,
  taskId: /^[\x21-\x7e]{1,64}$/,
} as const;

export function decodeCursor<K extends string>(
  cursor: string | undefined,
  keys: readonly K[],
  shapes?: Partial<Record<K, CursorShape>>,
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
    const shape = shapes?.[k];
    if (shape && !shape.test(v)) throw invalid;
    out[k] = v;
  }
  return out;
}
