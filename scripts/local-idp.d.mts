// Types of scripts/local-idp.mjs (plain JavaScript, so that `npm run idp` needs no build).
import type { JWK } from 'jose';

/** A private signing key as a JWK; `kid` is required, `alg` defaults to RS256. */
export type SigningJwk = JWK & { kid: string };

export interface LocalIdpClient {
  id: string;
  /** Default `<id>-secret`. */
  secret?: string;
  /** The `org` claim: a tenant's external id. */
  org?: string;
  /** The `roles` claim, e.g. `['arbiter:admin']`. */
  roles?: string[];
  /** The scopes the client may request; none: it may request none. */
  scopes?: string[];
  /** The client may also use the token-exchange grant (RFC 8693). */
  tokenExchange?: boolean;
}

export interface LocalIdpOptions {
  /** Default IDP_PORT, else 9400; 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default DEMO_CLIENTS. */
  clients?: readonly LocalIdpClient[];
  /** Private JWKs, the first signs; default one new RS256 key. */
  keys?: readonly SigningJwk[];
  /** Access token lifetime; default 3600. */
  ttlSeconds?: number;
  /** Resource servers besides Arbiter (`urn:arbiter`): resource URI → the `aud` of tokens for it. */
  resources?: Record<string, string>;
}

export interface LocalIdp {
  /** `http://127.0.0.1:<port>`, the tokens' `iss`. */
  readonly issuer: string;
  readonly port: number;
  readonly clients: readonly (LocalIdpClient & { secret: string })[];
  /** The published key ids, the signing key first. */
  kids(): string[];
  /** Puts a new signing key (default: a new RS256 key) in front of the published ones; returns its kid. */
  rotate(key?: SigningJwk): Promise<string>;
  /** Stops publishing a key that no longer signs. */
  retire(kid: string): void;
  close(): Promise<void>;
}

export const ARBITER_RESOURCE: 'urn:arbiter';
export const ARBITER_AUDIENCE: 'arbiter';
export const ARBITER_SCOPES: readonly string[];
export const TOKEN_EXCHANGE: 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE: 'urn:ietf:params:oauth:token-type:access_token';
export const DEMO_CLIENTS: readonly LocalIdpClient[];
export function clientSecret(id: string): string;
export function generateSigningKey(): Promise<SigningJwk>;
export function startLocalIdp(options?: LocalIdpOptions): Promise<LocalIdp>;
