/**
 * A real OpenID Provider on loopback for tests: scripts/local-idp.mjs (oidc-provider), the one `npm run idp`
 * runs, issuing JWT access tokens for Arbiter (`aud: arbiter`) through client_credentials over real HTTP.
 */
import type { LocalIdp, LocalIdpClient, SigningJwk } from '../../scripts/local-idp.mjs';

export type { LocalIdpClient, SigningJwk };

type LocalIdpModule = typeof import('../../scripts/local-idp.mjs');

// The script is plain JavaScript outside the compiled tree: from dist/test/helpers, three levels up is the root.
const { startLocalIdp, clientSecret, DEMO_CLIENTS } = (await import(
  new URL('../../../scripts/local-idp.mjs', import.meta.url).href
)) as LocalIdpModule;

/** The demo clients of `npm run idp` (secret `<id>-secret`): acme-agent, acme-dashboard, ops-alice, ops-audit, globex-agent. */
export const demoClients: readonly LocalIdpClient[] = DEMO_CLIENTS;

export interface TokenRequest {
  /** Space-separated scopes. */
  scope?: string;
  /** Default: none sent (the IdP defaults to `urn:arbiter`). */
  resource?: string;
  /** Default: the client's own secret. */
  secret?: string;
  /** How the client authenticates: HTTP Basic (default) or in the form body. */
  auth?: 'basic' | 'post';
}

export interface TokenResponse {
  status: number;
  body: Record<string, unknown>;
}

/** The IdP refused a token request (its OAuth error is in `body`). */
export class IdpTokenError extends Error {
  constructor(readonly response: TokenResponse) {
    super(`token request refused: ${response.status} ${JSON.stringify(response.body)}`);
  }
}

export interface TestIdp {
  /** `http://127.0.0.1:<port>`: the tokens' `iss`. */
  readonly issuer: string;
  /** `<issuer>/jwks`, as the discovery document names it. */
  readonly jwksUri: string;
  /** An access token (a JWT) for the client, or IdpTokenError. */
  token(clientId: string, req?: TokenRequest): Promise<string>;
  /** The token endpoint's answer as it is, refusals included. */
  tokenResponse(clientId: string, req?: TokenRequest): Promise<TokenResponse>;
  /** A new signing key in front; the old ones stay published. Returns the new kid. */
  rotate(key?: SigningJwk): Promise<string>;
  /** Stops publishing a key that no longer signs. */
  retire(kid: string): void;
  /** The published kids, the signing one first. */
  kids(): string[];
  close(): Promise<void>;
}

/** Starts an IdP on a free loopback port (default clients: `demoClients`). */
export async function startIdp(
  clients: readonly LocalIdpClient[] = demoClients,
  opts: { keys?: SigningJwk[]; ttlSeconds?: number; resources?: Record<string, string> } = {},
): Promise<TestIdp> {
  const idp: LocalIdp = await startLocalIdp({ port: 0, host: '127.0.0.1', clients, ...opts });
  const secrets = new Map(idp.clients.map((c) => [c.id, c.secret]));

  async function tokenResponse(clientId: string, req: TokenRequest = {}): Promise<TokenResponse> {
    const secret = req.secret ?? secrets.get(clientId) ?? clientSecret(clientId);
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (req.scope !== undefined) form.set('scope', req.scope);
    if (req.resource !== undefined) form.set('resource', req.resource);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (req.auth === 'post') {
      form.set('client_id', clientId);
      form.set('client_secret', secret);
    } else {
      // RFC 6749 §2.3.1: both parts form-urlencoded before Basic encoding.
      const basic = `${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`;
      headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
    }
    const res = await fetch(`${idp.issuer}/token`, { method: 'POST', headers, body: form });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  return {
    issuer: idp.issuer,
    jwksUri: `${idp.issuer}/jwks`,
    tokenResponse,
    async token(clientId, req) {
      const res = await tokenResponse(clientId, req);
      if (res.status !== 200 || typeof res.body.access_token !== 'string') throw new IdpTokenError(res);
      return res.body.access_token;
    },
    rotate: (key) => idp.rotate(key),
    retire: (kid) => idp.retire(kid),
    kids: () => idp.kids(),
    close: () => idp.close(),
  };
}
