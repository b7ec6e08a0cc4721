import { parseJsonText } from '../common/json-guard.js';
import { egressRequest, type EgressPolicy } from '../common/net/egress.js';
import { httpUrl, isObject, RegistryFileError } from '../common/registry-file/registry-fields.js';
import { CardKeyError, publicKeyOf, withKid, type PublicCardKey } from '../common/card-signing/card-keys.js';
import { CardSignatureError, verifyCard } from '../common/card-signing/card-signature.js';

type Json = Record<string, unknown>;

/** An entry's `card_signature`: the keys its card must be signed with (A2A §8.4.3, a trusted key store). */
export interface CardPin {
  /** The remote's JWKS, fetched through the egress guard whenever the card is. */
  jwksUrl?: string;
  /** One public key given inline (checked when the registry is read). */
  jwk?: Json;
  /** Refuse a card without signatures (default); `false`: an unsigned card is taken, unverified. */
  required: boolean;
}

/** How the card was checked: verified by a pinned key's `kid`, or taken unsigned (`required: false`). */
export type CardTrust = { verified: true; kid: string } | { verified: false };

const MAX_JWKS_BYTES = 64 * 1024;
const MAX_JWKS_KEYS = 32;

/**
 * `"card_signature": { "jwks_url": "…" | "jwk": { … }, "required"?: boolean }`: exactly one key source; an
 * inline key must be a public, asymmetric key of ES256 (P-256), RS256 (≥ 2048 bits) or EdDSA (Ed25519).
 */
export function readCardPin(value: unknown, at: string): CardPin {
  if (!isObject(value)) throw new RegistryFileError(`${at} must be an object`);
  for (const k of Object.keys(value)) {
    if (!['jwks_url', 'jwk', 'required'].includes(k)) throw new RegistryFileError(`${at}: unknown field "${k}"`);
  }
  if ((value.jwks_url === undefined) === (value.jwk === undefined)) {
    throw new RegistryFileError(`${at}: give jwks_url or jwk (one of them)`);
  }
  if (value.required !== undefined && typeof value.required !== 'boolean') {
    throw new RegistryFileError(`${at}.required must be true or false`);
  }
  const required = value.required !== false;
  if (value.jwks_url !== undefined) return { jwksUrl: httpUrl(value.jwks_url, `${at}.jwks_url`).href, required };
  try {
    publicKeyOf(value.jwk);
  } catch (err) {
    throw new RegistryFileError(`${at}.jwk ${(err as CardKeyError).message.replace(/^a JWK /, '')}`);
  }
  return { jwk: value.jwk as Json, required };
}

/** The pinned keys: the inline one, or the usable members of the JWKS (symmetric and invalid ones skipped). */
async function pinnedKeys(pin: CardPin, policy: EgressPolicy, timeoutMs: number, signal: AbortSignal) {
  if (pin.jwk) return [await withKid(publicKeyOf(pin.jwk))];
  const res = await egressRequest(pin.jwksUrl!, policy, {
    headers: { accept: 'application/jwk-set+json, application/json' },
    signal,
    timeoutMs,
    maxBytes: MAX_JWKS_BYTES,
  });
  if (res.truncated) throw new CardSignatureError(`the pinned JWKS is larger than ${MAX_JWKS_BYTES / 1024} KiB`);
  if (res.status !== 200) throw new CardSignatureError(`the pinned JWKS answered HTTP ${res.status}`);
  let doc: unknown;
  try {
    doc = parseJsonText(res.body.toString('utf8'));
  } catch {
    throw new CardSignatureError('the pinned JWKS is not JSON');
  }
  if (!isObject(doc) || !Array.isArray(doc.keys)) throw new CardSignatureError('the pinned JWKS has no "keys" list');
  const keys: PublicCardKey[] = [];
  for (const member of doc.keys.slice(0, MAX_JWKS_KEYS)) {
    try {
      keys.push(await withKid(publicKeyOf(member)));
    } catch {
      // A symmetric, private or unsupported key is never used to verify a card.
    }
  }
  if (keys.length === 0) {
    throw new CardSignatureError('the pinned JWKS has no usable public key (symmetric keys are refused)');
  }
  return keys;
}

/**
 * Checks a remote's card against its pin, failing closed: no valid signature by a pinned key → a
 * `CardSignatureError`, except an unsigned card when the pin does not require one.
 */
export async function checkCard(
  raw: Json,
  pin: CardPin,
  policy: EgressPolicy,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CardTrust> {
  const unsigned = raw.signatures === undefined || (Array.isArray(raw.signatures) && raw.signatures.length === 0);
  if (unsigned && !pin.required) return { verified: false };
  if (unsigned) throw new CardSignatureError('the card is not signed');
  let keys: PublicCardKey[];
  try {
    keys = await pinnedKeys(pin, policy, timeoutMs, signal);
  } catch (err) {
    if (err instanceof CardSignatureError) throw err;
    signal.throwIfAborted();
    throw new CardSignatureError(`the pinned JWKS could not be fetched: ${(err as Error).message.slice(0, 200)}`);
  }
  return { verified: true, kid: await verifyCard(raw, keys) };
}
