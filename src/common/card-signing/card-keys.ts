import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';

/** The algorithms a card may be signed with (§8.4.2 names ES256 and RS256; EdDSA for Ed25519 keys). */
export type CardAlg = 'ES256' | 'RS256' | 'EdDSA';

/** A key that cannot sign or verify cards; the message names the problem, never the key. */
export class CardKeyError extends Error {}

/** The key Arbiter signs its cards with, and its public half as published. */
export interface CardSigningKey {
  key: KeyObject;
  alg: CardAlg;
  kid: string;
  publicJwk: JWK;
}

/** A public key a verifier trusts: its `kid` (given, or the RFC 7638 thumbprint) and its one algorithm. */
export interface PublicCardKey {
  kid: string;
  alg: CardAlg;
  key: KeyObject;
  jwk: JWK;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth'];
const KID = /^[\x21-\x7e]{1,128}$/;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The one algorithm a key type allows: P-256 → ES256, RSA (≥ 2048 bits) → RS256, Ed25519 → EdDSA. */
export function algOf(key: KeyObject): CardAlg {
  const type = key.asymmetricKeyType;
  if (type === 'ec') {
    if (key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
    throw new CardKeyError('an EC key must be on the P-256 curve (ES256)');
  }
  if (type === 'rsa') {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
      throw new CardKeyError('an RSA key must have 2048 bits or more');
    }
    return 'RS256';
  }
  if (type === 'ed25519') return 'EdDSA';
  throw new CardKeyError(
    `${type ? `an ${type}` : 'a symmetric'} key cannot sign cards; use ES256 (P-256), RS256 or EdDSA (Ed25519)`,
  );
}

/** A JWK's own checks: asymmetric, `alg` (when given) the key's one algorithm, `kid` printable. */
function checkJwk(jwk: Record<string, unknown>, key: KeyObject): CardAlg {
  const alg = algOf(key);
  if (jwk.alg !== undefined && jwk.alg !== alg)
    throw new CardKeyError(`the key's alg must be ${alg} for this key type`);
  if (jwk.kid !== undefined && (typeof jwk.kid !== 'string' || !KID.test(jwk.kid))) {
    throw new CardKeyError('kid must be 1 to 128 printable ASCII characters');
  }
  return alg;
}

function jwkKty(jwk: Record<string, unknown>): void {
  if (jwk.kty === 'oct')
    throw new CardKeyError('symmetric keys (kty "oct") are refused: a card is signed with a public-key algorithm');
  if (jwk.kty !== 'EC' && jwk.kty !== 'RSA' && jwk.kty !== 'OKP') throw new CardKeyError('kty must be EC, RSA or OKP');
}

/**
 * A public JWK as a verifier takes it (a registry's `jwk`, a member of a JWKS), checked synchronously: no
 * symmetric key, no private members, a key the algorithms allow. `kid` is the thumbprint when absent.
 */
export function publicKeyOf(value: unknown): Omit<PublicCardKey, 'kid'> & { kid?: string } {
  if (!isObject(value)) throw new CardKeyError('a JWK must be an object');
  jwkKty(value);
  if (PRIVATE_MEMBERS.some((m) => value[m] !== undefined))
    throw new CardKeyError('must be a public key (it has private members)');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: value as JsonWebKey, format: 'jwk' });
  } catch {
    throw new CardKeyError('is not a valid public JWK');
  }
  const alg = checkJwk(value, key);
  const jwk = { ...(key.export({ format: 'jwk' }) as JWK), alg, use: 'sig' };
  return { key, alg, jwk, ...(typeof value.kid === 'string' ? { kid: value.kid } : {}) };
}

/** The public key with its `kid`: the one given, else the RFC 7638 thumbprint. */
export async function withKid(k: Omit<PublicCardKey, 'kid'> & { kid?: string }): Promise<PublicCardKey> {
  const kid = k.kid ?? (await calculateJwkThumbprint(k.jwk, 'sha256'));
  return { ...k, kid, jwk: { kid, ...k.jwk } };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CardKeyError('is not valid JSON');
  }
}

const PEM = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g;

/** The signing key from a file's text: a PEM private key (PKCS#8) or a private JWK. */
export async function readSigningKey(text: string): Promise<CardSigningKey> {
  let key: KeyObject;
  let kid: string | undefined;
  if (text.trimStart().startsWith('{')) {
    const jwk = parseJson(text);
    if (!isObject(jwk)) throw new CardKeyError('a JWK must be an object');
    jwkKty(jwk);
    if (jwk.d === undefined) throw new CardKeyError('the JWK is a public key; signing needs the private key');
    try {
      key = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
    } catch {
      throw new CardKeyError('is not a valid private JWK');
    }
    checkJwk(jwk, key);
    kid = jwk.kid as string | undefined;
  } else {
    const pem = text.match(PEM)?.[0];
    if (!pem || !/PRIVATE KEY/.test(pem)) throw new CardKeyError('must be a PEM private key (PKCS#8) or a private JWK');
    try {
      key = createPrivateKey(pem);
    } catch {
      throw new CardKeyError('is not a readable PEM private key');
    }
  }
  const pub = await withKid({
    ...publicKeyOf(createPublicKey(key).export({ format: 'jwk' })),
    ...(kid ? { kid } : {}),
  });
  return { key, alg: pub.alg, kid: pub.kid, publicJwk: pub.jwk };
}

/** Public keys from a file's text: a JWKS (`{"keys": […]}`), one JWK, or PEM blocks (public or private: only the public half is kept). */
export async function readPublicKeys(text: string): Promise<PublicCardKey[]> {
  let members: unknown[];
  if (text.trimStart().startsWith('{')) {
    const doc = parseJson(text);
    members = isObject(doc) && Array.isArray(doc.keys) ? doc.keys : [doc];
  } else {
    const pems = text.match(PEM) ?? [];
    if (pems.length === 0) throw new CardKeyError('must be a JWKS, a JWK or PEM keys');
    members = pems.map((pem) => {
      try {
        return createPublicKey(pem).export({ format: 'jwk' });
      } catch {
        throw new CardKeyError('holds a PEM block that is not a readable key');
      }
    });
  }
  return Promise.all(
    members.map((m, i) => {
      const pub = isObject(m) ? Object.fromEntries(Object.entries(m).filter(([k]) => !PRIVATE_MEMBERS.includes(k))) : m;
      try {
        return withKid(publicKeyOf(pub));
      } catch (err) {
        throw new CardKeyError(`key ${i + 1}: ${(err as Error).message}`);
      }
    }),
  );
}
