/**
 * The access tokens Arbiter was issued for remotes (OAuth client credentials, token exchange), remembered so that
 * a remote quoting one back — in an error, a failed task, an auth request — has it taken out of what is shown, like
 * the secrets of its entry. A JWT is caught by its shape; an opaque token only by being known. The newest
 * `MAX_TOKENS` are kept (a token refused and replaced is still kept: the refusal is what quotes it).
 */
const MAX_TOKENS = 4096;
/** Tokens shorter than this are not looked for (no token endpoint issues them; they could match ordinary words). */
const MIN_LENGTH = 8;
/**
 * Nor longer ones than this (a JWT is caught by its shape). A text cut to a length is searched up to this much past
 * it, then cut again: a token that begins before the cut is found whole (see `stripSecrets`).
 */
export const MAX_TOKEN_LENGTH = 8192;

const tokens = new Set<string>();
/**
 * The tokens by their first three characters' codes, then by their first `MIN_LENGTH` characters: a text is
 * searched at each position with a numeric lookup, and a string is cut only where a token could begin (many
 * tokens share a prefix: `ya29.`, `gho_` …).
 */
const byPrefix = new Map<number, Map<string, string[]>>();
const keyAt = (text: string, i: number): number =>
  text.charCodeAt(i) * 2 ** 32 + text.charCodeAt(i + 1) * 2 ** 16 + text.charCodeAt(i + 2);

/** Remembers a token Arbiter was issued (the oldest is forgotten past `MAX_TOKENS`). */
export function rememberIssued(token: string): void {
  if (token.length < MIN_LENGTH || token.length > MAX_TOKEN_LENGTH || tokens.has(token)) return;
  tokens.add(token);
  const inner = byPrefix.get(keyAt(token, 0)) ?? new Map<string, string[]>();
  const head = token.slice(0, MIN_LENGTH);
  inner.set(head, [...(inner.get(head) ?? []), token]);
  byPrefix.set(keyAt(token, 0), inner);
  if (tokens.size > MAX_TOKENS) forget(tokens.values().next().value as string);
}

function forget(token: string): void {
  tokens.delete(token);
  const inner = byPrefix.get(keyAt(token, 0));
  const head = token.slice(0, MIN_LENGTH);
  const rest = (inner?.get(head) ?? []).filter((t) => t !== token);
  if (rest.length) inner?.set(head, rest);
  else inner?.delete(head);
  if (inner?.size === 0) byPrefix.delete(keyAt(token, 0));
}

/** `text` with every remembered token in it replaced by `[redacted]`; linear in the text. */
export function stripIssued(text: string): string {
  if (tokens.size === 0 || text.length < MIN_LENGTH) return text;
  let out = '';
  let from = 0;
  for (let i = 0; i + MIN_LENGTH <= text.length;) {
    const candidates = byPrefix.get(keyAt(text, i))?.get(text.slice(i, i + MIN_LENGTH));
    // The longest token that starts here, should one be another's prefix.
    let found = '';
    if (candidates) for (const t of candidates) if (t.length > found.length && text.startsWith(t, i)) found = t;
    if (!found) {
      i++;
      continue;
    }
    out += `${text.slice(from, i)}[redacted]`;
    i += found.length;
    from = i;
  }
  return from === 0 ? text : out + text.slice(from);
}
