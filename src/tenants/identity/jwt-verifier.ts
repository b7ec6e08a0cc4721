import {
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type CryptoKey,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import { LAST_INSTANT } from '../../common/iso-time.js';
import { KeyNotFound, type IssuerKeys, type KeyMiss } from './issuer-keys.js';
import { ASYMMETRIC_ALGORITHMS, type AsymmetricAlgorithm, type TrustedIssuer } from './trusted-issuer.js';

/** A longer token is refused before anything in it is decoded. */
export const MAX_TOKEN_LENGTH = 8 * 1024;

/**
 * A token that is not accepted. `reason` is short and safe to show the token's holder (it never echoes more of the
 * token than a well-formed algorithm or type name); `detail` is for the log only.
 */
export class JwtRefusal extends Error {
  constructor(
    readonly reason: string,
    readonly status: 401 | 403 = 401,
    readonly detail?: string,
  ) {
    super(reason);
    this.name = 'JwtRefusal';
  }
}

export interface VerifiedJwt {
  issuer: TrustedIssuer;
  claims: JWTPayload;
  /** `exp`, in epoch milliseconds. */
  expiresAt: number;
  kid?: string;
}

/** Finds the trusted issuer whose `issuer` is exactly this `iss`. */
export type IssuerLookup = (iss: string) => TrustedIssuer | undefined;

const BASE64URL = /^[A-Za-z0-9_-]*$/;
/** A header value short and plain enough to quote in a reason. */
const QUOTABLE = /^[A-Za-z0-9._+/-]{1,40}$/;

/**
 * Verifies JWT access tokens of trusted issuers (RFC 7519, with the checks of RFC 8725 §3 and RFC 9068): cheap
 * shape checks first, the issuer looked up before any key is fetched (an unknown `iss` costs no request), the
 * algorithm pinned to the issuer's asymmetric list, and the signature and claims checked by `jose`.
 */
export class JwtVerifier {
  private readonly now: () => number;

  constructor(
    private readonly keys: IssuerKeys,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? keys.now;
  }

  /** The verified token, or a `JwtRefusal` (and never another error). */
  async verify(token: string, issuers: IssuerLookup): Promise<VerifiedJwt> {
    try {
      return await this.check(token, issuers);
    } catch (err) {
      if (err instanceof JwtRefusal) throw err;
      throw new JwtRefusal('token could not be verified', 401, `unexpected error: ${String(err)}`);
    }
  }

  private async check(token: string, issuers: IssuerLookup): Promise<VerifiedJwt> {
    const header = checkShape(token);
    const alg = acceptedAlgorithm(header.alg);
    const issuer = issuerOf(token, issuers);
    if (!issuer.algorithms.includes(alg)) {
      throw new JwtRefusal(`token signature algorithm "${alg}" is not accepted for this issuer`);
    }
    if (header.kid !== undefined && (typeof header.kid !== 'string' || header.kid === '')) {
      throw new JwtRefusal('token header is not valid', 401, 'kid is not a non-empty string');
    }
    const key = await this.key(issuer, header.kid, alg);
    let claims: JWTPayload;
    const now = this.now();
    try {
      ({ payload: claims } = await jwtVerify(token, key, {
        issuer: issuer.issuer,
        audience: issuer.audiences,
        algorithms: [alg],
        clockTolerance: issuer.clockSkewSeconds,
        currentDate: new Date(now),
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      throw joseRefusal(err);
    }
    // An expiry past year 9999 is no time this server can write (in /v1/me, the audit, the cache): not a valid claim.
    if ((claims.exp as number) * 1000 > LAST_INSTANT) throw new JwtRefusal('token claim "exp" is not valid');
    if (typeof claims.iat === 'number' && claims.iat > now / 1000 + issuer.clockSkewSeconds) {
      throw new JwtRefusal('token was issued in the future');
    }
    if (!nonEmptyString(claims.sub) && !nonEmptyString(claims.client_id)) {
      throw new JwtRefusal('token has no subject (sub or client_id)');
    }
    return { issuer, claims, expiresAt: (claims.exp as number) * 1000, ...(header.kid ? { kid: header.kid } : {}) };
  }

  private async key(issuer: TrustedIssuer, kid: string | undefined, alg: AsymmetricAlgorithm): Promise<CryptoKey> {
    try {
      return await this.keys.keyFor(issuer, kid, alg);
    } catch (err) {
      if (err instanceof KeyNotFound) throw new JwtRefusal(KEY_MISS_REASONS[err.miss], 401, err.detail);
      throw err;
    }
  }
}

const KEY_MISS_REASONS: Record<KeyMiss, string> = {
  unavailable: "the token issuer's signing keys are unavailable",
  unknown_kid: 'token signing key is not known',
  no_key_for_alg: "the token issuer has no signing key for the token's algorithm",
  ambiguous: 'token has no key id (kid) and the issuer has several signing keys',
};

/** Length, compact JWS form (three base64url parts), and a header with nothing we refuse to honour. */
function checkShape(token: string): JWTHeaderParameters {
  if (typeof token !== 'string' || token.length === 0) throw new JwtRefusal('token is not a JWT');
  if (token.length > MAX_TOKEN_LENGTH) throw new JwtRefusal('token is too long');
  const parts = token.split('.');
  // RFC 7516 §7.1: the compact JWE serialization has five parts.
  if (parts.length === 5) throw new JwtRefusal('encrypted tokens are not accepted');
  if (parts.length !== 3 || !parts.every((p) => BASE64URL.test(p)) || !parts[0] || !parts[1]) {
    throw new JwtRefusal('token is not a JWT');
  }
  let header: JWTHeaderParameters;
  try {
    header = decodeProtectedHeader(token) as JWTHeaderParameters;
  } catch {
    throw new JwtRefusal('token header is not valid');
  }
  if (header.enc !== undefined) throw new JwtRefusal('encrypted tokens are not accepted');
  // RFC 7515 §4.1.11: an extension we do not understand must make the token invalid; we understand none.
  if (header.crit !== undefined) throw new JwtRefusal('token header has critical extensions (crit), not accepted');
  // RFC 7519 §5.2: a nested JWT; access tokens are never nested.
  if (typeof header.cty === 'string' && header.cty.toUpperCase() === 'JWT') {
    throw new JwtRefusal('nested tokens are not accepted');
  }
  checkTyp(header.typ);
  return header;
}

/** `typ` is optional; when present it is `JWT` or `at+jwt` (RFC 9068 §2.1), the `application/` prefix allowed. */
function checkTyp(typ: unknown): void {
  if (typ === undefined) return;
  const plain = typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : null;
  if (plain === 'jwt' || plain === 'at+jwt') return;
  throw new JwtRefusal(quotable(typ) ? `token type "${typ}" is not accepted` : 'token type is not accepted');
}

/** An asymmetric algorithm: `none` (RFC 8725 §3.2) and HMAC (key confusion, §2.8) are never accepted. */
function acceptedAlgorithm(alg: unknown): AsymmetricAlgorithm {
  const known = ASYMMETRIC_ALGORITHMS.find((a) => a === alg);
  if (known) return known;
  if (alg === undefined) throw new JwtRefusal('token header names no signature algorithm');
  throw new JwtRefusal(
    quotable(alg) ? `token signature algorithm "${alg}" is not accepted` : 'token signature algorithm is not accepted',
  );
}

/** The trusted issuer the unverified `iss` names: an unknown one is refused before any key is fetched. */
function issuerOf(token: string, issuers: IssuerLookup): TrustedIssuer {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    throw new JwtRefusal('token claims are not valid');
  }
  if (!nonEmptyString(claims.iss)) throw new JwtRefusal('token has no issuer (iss)');
  const issuer = issuers(claims.iss);
  // The lookup is the caller's: guard against one that is not exact.
  if (!issuer || issuer.issuer !== claims.iss) throw new JwtRefusal('token issuer is not trusted');
  return issuer;
}

/** jose's verdicts as reasons. */
function joseRefusal(err: unknown): JwtRefusal {
  if (err instanceof errors.JWTExpired) return new JwtRefusal('token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) return claimRefusal(err.claim, err.reason);
  if (err instanceof errors.JWSSignatureVerificationFailed) return new JwtRefusal('token signature is not valid');
  if (err instanceof errors.JOSEAlgNotAllowed) return new JwtRefusal('token signature algorithm is not accepted');
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) {
    return new JwtRefusal('token is not a valid JWT', 401, err.message);
  }
  if (err instanceof errors.JOSEError) return new JwtRefusal('token could not be verified', 401, err.code);
  // A key of the wrong kind, a curve this runtime lacks: not the token holder's to know.
  return new JwtRefusal('token could not be verified', 401, err instanceof Error ? err.message : String(err));
}

function claimRefusal(claim: string, reason: string): JwtRefusal {
  if (reason === 'missing') {
    const names: Record<string, string> = { exp: 'expiry (exp)', aud: 'audience (aud)', iss: 'issuer (iss)' };
    return new JwtRefusal(`token has no ${names[claim] ?? 'required claim'}`, 401, claim);
  }
  if (reason === 'invalid') {
    return new JwtRefusal(quotable(claim) ? `token claim "${claim}" is not valid` : 'token claims are not valid');
  }
  switch (claim) {
    case 'aud':
      return new JwtRefusal('token audience does not match');
    case 'iss':
      return new JwtRefusal('token issuer is not trusted');
    case 'nbf':
      return new JwtRefusal('token is not yet valid');
    case 'iat':
      return new JwtRefusal('token was issued in the future');
    default:
      return new JwtRefusal('token claims are not valid', 401, `${claim}: ${reason}`);
  }
}

function quotable(v: unknown): v is string {
  return typeof v === 'string' && QUOTABLE.test(v);
}

function nonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v !== '';
}
