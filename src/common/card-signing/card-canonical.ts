import canonicalize from 'canonicalize';
import { AgentCard, canonicalizeAgentCard } from '@a2a-js/sdk';

type Json = Record<string, unknown>;

/**
 * §8.4.1's default removal on a card's JSON: `null`, `""`, `[]` and `{}` are
 * dropped, recursively (ProtoJSON's defaults; the same rule as the SDKs'
 * `clean_empty`), `false` and `0` kept (the card's booleans are `optional`).
 */
export function withoutDefaults(value: unknown): unknown {
  if (value === null || value === undefined || value === '') return undefined;
  if (Array.isArray(value)) {
    const items = value.map(withoutDefaults).filter((v) => v !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value as Json)) {
      const kept = withoutDefaults(v);
      if (kept !== undefined) out[k] = kept;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  return value;
}

/**
 * The card as served, without `signatures`, defaults removed, in JCS
 * (RFC 8785): what a verifier that canonicalises the JSON it received
 * computes. Covers every field, the v0.3 ones of a compatible card too.
 */
export function fullCanonical(card: Json): string {
  const { signatures: _signatures, ...rest } = card;
  return canonicalize(withoutDefaults(rest) ?? {}) ?? '{}';
}

/**
 * The card's v1.0 fields only, as the official SDK canonicalises it
 * (`canonicalizeAgentCard`: ProtoJSON round trip, defaults removed, JCS):
 * what its `verifyAgentCardSignature` checks. It must be given the card's
 * JSON, not the SDK's decoded object (whose one-ofs it would drop).
 */
export function schemaCanonical(card: Json): string {
  return canonicalizeAgentCard(card as unknown as AgentCard);
}

/** A v0.3-shaped card (its endpoint in a top-level `url`), whose client reads fields outside the v1.0 schema. */
export function isV03Shaped(card: Json): boolean {
  return typeof card.url === 'string';
}
