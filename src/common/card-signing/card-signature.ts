import { base64url, decodeProtectedHeader, FlattenedSign, flattenedVerify } from 'jose';
import { fullCanonical, isV03Shaped, schemaCanonical } from './card-canonical.js';
import type { CardSigningKey, PublicCardKey } from './card-keys.js';

type Json = Record<string, unknown>;

/** §8.4.2's AgentCardSignature: the JWS's protected header and signature (the payload is the card). */
export interface CardSignature {
  protected: string;
  signature: string;
}

/** Why a card's signatures were not accepted; the message is safe to show (it quotes no key, at most a short kid). */
export class CardSignatureError extends Error {}

const MAX_SIGNATURES = 8;

/**
 * The canonical payloads a card is signed over: the whole card (`fullCanonical`), and, when it differs, the
 * v1.0 fields alone as the official SDK canonicalises them (a v0.3-shaped card's extra fields), so that both a
 * verifier of the JSON as received and the SDK's `verifyAgentCardSignature` find a signature they can check.
 */
export function signedForms(card: Json): string[] {
  const full = fullCanonical(card);
  const schema = schemaCanonical(card);
  return schema === full ? [full] : [full, schema];
}

/** §8.4.2: a JWS with detached payload over `payload`; protected header `alg`, `typ: JOSE`, `kid`, and `jku`. */
export async function signPayload(payload: string, key: CardSigningKey, jku?: string): Promise<CardSignature> {
  const jws = await new FlattenedSign(new TextEncoder().encode(payload))
    .setProtectedHeader({ alg: key.alg, typ: 'JOSE', kid: key.kid, ...(jku ? { jku } : {}) })
    .sign(key.key);
  return { protected: jws.protected ?? '', signature: jws.signature };
}

const shortKid = (kid: string): string => JSON.stringify(kid.replace(/[^\x21-\x7e]/g, '?').slice(0, 64));

/**
 * §8.4.3 against pinned keys: at least one of the card's signatures must verify with a pinned key of its
 * `kid` and that key's algorithm, over the whole card; or, for a card in the v1.0 shape (whose client reads
 * only v1.0 fields), over its v1.0 fields as the SDK canonicalises them. Returns that signature's `kid`.
 */
export async function verifyCard(card: Json, keys: PublicCardKey[]): Promise<string> {
  const sigs = card.signatures;
  if (sigs === undefined || (Array.isArray(sigs) && sigs.length === 0))
    throw new CardSignatureError('the card is not signed');
  if (!Array.isArray(sigs)) throw new CardSignatureError('"signatures" is not a list');
  if (sigs.length > MAX_SIGNATURES) throw new CardSignatureError(`more than ${MAX_SIGNATURES} signatures`);
  const full = fullCanonical(card);
  const forms = isV03Shaped(card) ? [full] : [...new Set([full, schemaCanonical(card)])];
  let problem = 'no signature could be checked';
  for (const sig of sigs as unknown[]) {
    const s = sig as Partial<Record<'protected' | 'signature' | 'header', unknown>>;
    if (typeof s?.protected !== 'string' || typeof s.signature !== 'string') {
      problem = 'a signature lacks "protected" or "signature"';
      continue;
    }
    let header: { alg?: unknown; kid?: unknown };
    try {
      header = decodeProtectedHeader({ protected: s.protected, signature: s.signature });
    } catch {
      problem = "a signature's protected header is not valid";
      continue;
    }
    if (typeof header.kid !== 'string' || typeof header.alg !== 'string') {
      problem = "a signature's protected header lacks kid or alg";
      continue;
    }
    const key = keys.find((k) => k.kid === header.kid);
    if (!key) {
      problem = `no pinned key has kid ${shortKid(header.kid)}`;
      continue;
    }
    if (key.alg !== header.alg) {
      problem = `alg ${shortKid(header.alg)} is not the pinned key's ${key.alg}`;
      continue;
    }
    for (const form of forms) {
      try {
        const payload = base64url.encode(new TextEncoder().encode(form));
        await flattenedVerify({ payload, protected: s.protected, signature: s.signature }, key.key, {
          algorithms: [key.alg],
        });
        return key.kid;
      } catch {
        problem = `the signature by kid ${shortKid(key.kid)} does not match the card's content`;
      }
    }
  }
  throw new CardSignatureError(problem);
}
