import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { base64url, compactVerify, createLocalJWKSet, type JSONWebKeySet, type JWK } from 'jose';
import { verifyAgentCardSignature, type AgentCard } from '@a2a-js/sdk';

type Json = Record<string, unknown>;

/** A fresh key pair of the kind a card may be signed with. */
export function newKeyPair(kind: 'ES256' | 'RS256' | 'EdDSA'): { privateKey: KeyObject; publicKey: KeyObject } {
  switch (kind) {
    case 'ES256':
      return generateKeyPairSync('ec', { namedCurve: 'P-256' });
    case 'RS256':
      return generateKeyPairSync('rsa', { modulusLength: 2048 });
    case 'EdDSA':
      return generateKeyPairSync('ed25519');
  }
}

/** Writes the private key as PEM (PKCS#8), or as a JWK with the given `kid`; returns the path. */
export function writePrivateKey(path: string, key: KeyObject, kid?: string): string {
  const text =
    kid === undefined
      ? (key.export({ type: 'pkcs8', format: 'pem' }) as string)
      : JSON.stringify({ ...key.export({ format: 'jwk' }), kid });
  writeFileSync(path, text);
  return path;
}

/**
 * §8.4.1 default removal, written here again on purpose (not Arbiter's code): what a verifier of its own
 * does with the card it received before JCS — `null`, `""`, `[]` and `{}` dropped, recursively.
 */
function dropDefaults(v: unknown): unknown {
  if (v === null || v === '' || v === undefined) return undefined;
  if (Array.isArray(v)) {
    const a = v.map(dropDefaults).filter((x) => x !== undefined);
    return a.length ? a : undefined;
  }
  if (typeof v === 'object') {
    const o = Object.fromEntries(
      Object.entries(v as Json)
        .map(([k, x]) => [k, dropDefaults(x)] as const)
        .filter(([, x]) => x !== undefined),
    );
    return Object.keys(o).length ? o : undefined;
  }
  return v;
}

/**
 * An independent check with `jose` alone: the card without `signatures`, defaults dropped, JCS
 * (`canonicalize`), then each signature as a compact JWS with detached payload
 * (`protected..signature`, the payload put back) against the JWKS. Returns the kid that verified.
 */
export async function verifyIndependently(card: Json, jwks: JSONWebKeySet): Promise<string> {
  const { signatures, ...rest } = card;
  const payload = base64url.encode(canonicalize(dropDefaults(rest)) ?? '{}');
  const keys = createLocalJWKSet(jwks);
  let last: unknown = new Error('no signatures');
  for (const sig of (signatures as { protected: string; signature: string }[] | undefined) ?? []) {
    try {
      const { protectedHeader } = await compactVerify(`${sig.protected}.${payload}.${sig.signature}`, keys);
      if (protectedHeader.typ !== 'JOSE') throw new Error(`typ ${String(protectedHeader.typ)}`);
      return protectedHeader.kid!;
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/** The official SDK's verifier (`verifyAgentCardSignature`), given the card's JSON, with keys from the JWKS by kid. */
export async function verifyWithSdk(card: Json, jwks: { keys: JWK[] }): Promise<void> {
  const verifier = verifyAgentCardSignature((kid) => {
    const key = jwks.keys.find((k) => k.kid === kid);
    return key ? Promise.resolve(key) : Promise.reject(new Error(`no key ${kid}`));
  });
  const debug = console.debug;
  console.debug = () => undefined; // it logs every signature that does not verify (a v0.3 card's first one)
  try {
    await verifier(card as unknown as AgentCard);
  } finally {
    console.debug = debug;
  }
}

/** The protected header of a card's signatures, decoded. */
export function headersOf(card: Json): Json[] {
  return ((card.signatures as { protected: string }[] | undefined) ?? []).map(
    (s) => JSON.parse(new TextDecoder().decode(base64url.decode(s.protected))) as Json,
  );
}
