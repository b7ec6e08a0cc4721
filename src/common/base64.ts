/** A character that standard base64 does not use (padding aside). */
const NOT_BASE64 = /[^A-Za-z0-9+/]/;

/**
 * Whether `s` is padded standard base64 (RFC 4648 §4): whole quanta of four characters, the last one ending in at
 * most two `=`. Linear in the length and without backtracking: a pattern that repeats a group per quantum keeps
 * one backtracking entry per repetition, and on a file of a few MiB it overflows the regular expression stack.
 */
export function isPaddedBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return !NOT_BASE64.test(pad ? s.slice(0, -pad) : s);
}
