const TRUNCATED = '\n... [truncated]';

/** Cuts `text` to `max` bytes of UTF-8 (on a character boundary), marking the cut with `... [truncated]`. */
export function capBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const room = Math.max(0, max - Buffer.byteLength(TRUNCATED));
  let cut = Buffer.from(text).subarray(0, room).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return cut + TRUNCATED;
}
