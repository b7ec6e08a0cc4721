import { importJWK, type CryptoKey, type JWK } from 'jose';
import {
  EgressError,
  egressRequest,
  type EgressPolicy,
  type EgressResponse,
  hostListed,
} from '../../common/net/egress.js';
import type { AsymmetricAlgorithm, TrustedIssuer } from './trusted-issuer.js';

/**
 * Fetching one issuer's signing keys: its discovery document (OpenID Connect Discovery 1.0 §4) when no JWKS URL is
 * configured, then its JWK Set (RFC 7517 §5). Every request goes through the egress guard, is bounded in time and
 * size, and every answer is checked before it is believed.
 */

/** One public signing key of an issuer, imported once for each accepted algorithm it may verify. */
export interface IssuerKey {
  kid: string | undefined;
  byAlg: ReadonlyMap<AsymmetricAlgorithm, CryptoKey>;
}

/** Why an issuer's keys could not be fetched, for the log (never shown to a token's holder). */
export class KeySourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeySourceError';
  }
}

export interface FetchLimits {
  policy: EgressPolicy;
  timeoutMs: number;
  /** A larger document is refused, not parsed. */
  maxBytes: number;
  /** Keys beyond this many in one JWK Set are ignored. */
  maxKeys: number;
}

/** The discovery document's `jwks_uri`, after checking that it speaks for exactly this issuer (mix-up defence). */
export async function discoverJwksUri(issuer: TrustedIssuer, limits: FetchLimits): Promise<string> {
  // OpenID Connect Discovery §4: a terminating "/" is removed before appending the well-known path.
  const url = `${issuer.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const doc = await fetchJson(url, limits, 'discovery document');
  if (!isRecord(doc)) throw new KeySourceError('discovery document is not a JSON object');
  // §4.3: the issuer value returned MUST be identical to the one the configuration was retrieved for.
  if (doc.issuer !== issuer.issuer) throw new KeySourceError('discovery document names another issuer');
  if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri) throw new KeySourceError('discovery document has no jwks_uri');
  requireSafeUrl(doc.jwks_uri, limits.policy, 'jwks_uri');
  return doc.jwks_uri;
}

/** The usable keys of the JWK Set at `uri`, and how many keys it listed that were not usable. */
export async function fetchJwks(
  uri: string,
  algorithms: readonly AsymmetricAlgorithm[],
  limits: FetchLimits,
): Promise<{ keys: IssuerKey[]; ignored: number }> {
  const doc = await fetchJson(uri, limits, 'JWKS');
  if (!isRecord(doc) || !Array.isArray(doc.keys))
    throw new KeySourceError('JWKS is not a JSON object with a keys array');
  const listed: unknown[] = doc.keys;
  const keys: IssuerKey[] = [];
  for (const jwk of listed.slice(0, limits.maxKeys)) {
    const key = await importKey(jwk, algorithms);
    if (key) keys.push(key);
  }
  if (keys.length === 0) throw new KeySourceError(`JWKS has no usable signing key (of ${listed.length} listed)`);
  return { keys, ignored: listed.length - keys.length };
}

/** Plain http only for a host (or host:port) of the allowlist; https otherwise. */
export function requireSafeUrl(raw: string, policy: EgressPolicy, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new KeySourceError(`${what} is not a valid URL`);
  }
  if (url.protocol === 'https:') return url;
  if (url.protocol !== 'http:') throw new KeySourceError(`${what} must be https`);
  if (hostListed(url, policy)) return url;
  throw new KeySourceError(`${what} is plain http and its host is not in ARBITER_IDENTITY_ALLOWLIST`);
}

async function fetchJson(url: string, limits: FetchLimits, what: string): Promise<unknown> {
  requireSafeUrl(url, limits.policy, what);
  let res: EgressResponse;
  try {
    res = await egressRequest(url, limits.policy, {
      timeoutMs: limits.timeoutMs,
      maxBytes: limits.maxBytes,
      headers: { accept: 'application/json, application/jwk-set+json' },
    });
  } catch (err) {
    if (err instanceof EgressError) throw new KeySourceError(`${what}: ${err.message}`);
    throw err;
  }
  // A redirect may have led elsewhere: the final URL obeys the same scheme rule.
  requireSafeUrl(res.url.href, limits.policy, `${what} (after a redirect)`);
  if (res.status !== 200) throw new KeySourceError(`${what}: HTTP ${res.status}`);
  if (res.truncated) throw new KeySourceError(`${what} is larger than ${Math.round(limits.maxBytes / 1024)} KiB`);
  try {
    return JSON.parse(res.body.toString('utf8')) as unknown;
  } catch {
    throw new KeySourceError(`${what} is not JSON`);
  }
}

/** The curve each elliptic-curve algorithm needs (RFC 7518 §3.4). */
const EC_CURVES: Partial<Record<AsymmetricAlgorithm, string>> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

/** Whether a public key of this type and curve can verify `alg` at all. */
function fits(kty: string, crv: unknown, alg: AsymmetricAlgorithm): boolean {
  switch (kty) {
    case 'RSA':
      return /^(RS|PS)\d{3}$/.test(alg);
    case 'EC':
      return EC_CURVES[alg] === crv;
    case 'OKP':
      return alg === 'EdDSA' && (crv === 'Ed25519' || crv === 'Ed448');
    default:
      return false;
  }
}

/** The public members only (RFC 7518 §6): what is imported is never more than a verification key. */
function publicJwk(jwk: Record<string, unknown>): JWK | null {
  const str = (k: string): k is string => typeof jwk[k] === 'string' && jwk[k] !== '';
  switch (jwk.kty) {
    case 'RSA':
      return str('n') && str('e') ? { kty: 'RSA', n: jwk.n as string, e: jwk.e as string } : null;
    case 'EC':
      return str('crv') && str('x') && str('y')
        ? { kty: 'EC', crv: jwk.crv as string, x: jwk.x as string, y: jwk.y as string }
        : null;
    case 'OKP':
      return str('crv') && str('x') ? { kty: 'OKP', crv: jwk.crv as string, x: jwk.x as string } : null;
    default:
      // `oct` (a shared secret has no place in a public key set) and anything else.
      return null;
  }
}

/**
 * One JWK as a verification key, or null when it is not one: symmetric, for encryption, not for `verify`, carrying
 * private members, of no accepted algorithm, or not importable.
 */
async function importKey(jwk: unknown, algorithms: readonly AsymmetricAlgorithm[]): Promise<IssuerKey | null> {
  if (!isRecord(jwk)) return null;
  if (jwk.use !== undefined && jwk.use !== 'sig') return null;
  if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) return null;
  if (jwk.d !== undefined) return null;
  if (jwk.kid !== undefined && typeof jwk.kid !== 'string') return null;
  const pub = publicJwk(jwk);
  if (!pub?.kty) return null;
  const byAlg = new Map<AsymmetricAlgorithm, CryptoKey>();
  for (const alg of algorithms) {
    if (jwk.alg !== undefined && jwk.alg !== alg) continue;
    if (!fits(pub.kty, pub.crv, alg)) continue;
    try {
      const key = await importJWK(pub, alg);
      if (!(key instanceof Uint8Array)) byAlg.set(alg, key);
    } catch {
      // Not a valid key for this algorithm (a bad point, an unsupported curve): not usable for it.
    }
  }
  return byAlg.size > 0 ? { kid: jwk.kid, byAlg } : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
