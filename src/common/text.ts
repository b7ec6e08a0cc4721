const TRUNCATED = '\n... [truncated]';

/** Text as PostgreSQL can store it: a NUL, or an unpaired surrogate, becomes U+FFFD (its text and jsonb take neither). */
export function storable(text: string): string {
  return text.replaceAll('\u0000', '\uFFFD').toWellFormed();
}

/** Cuts `text` to `max` bytes of UTF-8 (on a character boundary), marking the cut with `... [truncated]`. */
export function capBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const room = Math.max(0, max - Buffer.byteLength(TRUNCATED));
  let cut = Buffer.from(text).subarray(0, room).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + TRUNCATED;
}
