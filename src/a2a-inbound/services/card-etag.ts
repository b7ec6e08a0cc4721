import { createHash } from 'node:crypto';

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 27);

/**
 * A served card's validator. An unsigned card: strong, over the bytes served (`body`). A signed card: weak, over
 * the card with its signatures' protected headers (key, algorithm, key set) but not their values — an ES256
 * signature differs on every signing, so replicas holding one key serve one ETag for one card, and a copy another
 * replica signed is kept (304) as the equivalent it is.
 */
export function cardEtag(card: unknown, body: string): string {
  const signatures = (card as { signatures?: unknown }).signatures;
  if (!Array.isArray(signatures) || signatures.length === 0) return `"${digest(body)}"`;
  const headers = signatures.map((s) => {
    const { signature: _value, ...header } = s as Record<string, unknown>;
    return header;
  });
  return `W/"${digest(JSON.stringify({ ...(card as object), signatures: headers }))}"`;
}

/** Whether an `If-None-Match` value names `etag`, compared weakly (RFC 9110 §13.1.2; `*` matches any). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const opaque = (tag: string): string => (tag.startsWith('W/') ? tag.slice(2) : tag);
  return ifNoneMatch.split(',').some((t) => t.trim() === '*' || opaque(t.trim()) === opaque(etag));
}
