/** The JWS algorithms an issuer may sign with: asymmetric only (`none` and HMAC are never accepted). */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
export type AsymmetricAlgorithm = (typeof ASYMMETRIC_ALGORITHMS)[number];

/** The role claim values that make a JWT's holder an operator. */
export const OPERATOR_ROLES = { admin: 'arbiter:admin', auditor: 'arbiter:auditor' } as const;

/**
 * An identity provider whose JWT access tokens Arbiter accepts, as an operator declared it
 * (`/v1/admin/issuers`, or the trusted-issuers file).
 */
export interface TrustedIssuer {
  id: string;
  /** The exact `iss` value (and the base of its discovery document `…/.well-known/openid-configuration`). */
  issuer: string;
  /** Accepted `aud` values (a token must carry at least one). */
  audiences: string[];
  /** Accepted `alg` values, a subset of ASYMMETRIC_ALGORITHMS. */
  algorithms: AsymmetricAlgorithm[];
  /** Allowed clock difference for `exp`/`nbf`/`iat`, in seconds. */
  clockSkewSeconds: number;
  /** The JWKS URL; null: the discovery document's `jwks_uri`. */
  jwksUri: string | null;
  /** A claim whose value is a tenant's `external_id` (null when the issuer is bound to one tenant). */
  tenantClaim: string | null;
  /** The one tenant every token of this issuer acts for (an organisation with its own IdP); null: by tenantClaim. */
  tenantId: string | null;
  /** The claim whose values grant operator roles (`arbiter:admin`, `arbiter:auditor`); null: no operators. */
  roleClaim: string | null;
  /**
   * How `scope`/`scp` values map to Arbiter scopes: `{"<their scope>": ["<arbiter scope>", …]}`. A value that
   * equals an Arbiter scope name always grants it.
   */
  scopeMap: Record<string, string[]>;
  createdAt: string;
  updatedAt: string;
}
