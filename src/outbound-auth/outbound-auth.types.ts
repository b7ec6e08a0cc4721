/** How Arbiter authenticates to a remote A2A agent or an MCP server over HTTP (resolved: no `*_env` left). */
export type OutboundAuth =
  | { type: 'none' }
  | { type: 'bearer'; token: string }
  | { type: 'header'; name: string; value: string }
  | ({ type: 'oauth2_client_credentials' } & OAuthClient)
  | { type: 'mtls'; tls: TlsIdentity }
  | ({ type: 'token_exchange'; actorToken: boolean } & OAuthClient);

export type OutboundAuthType = OutboundAuth['type'];

export const OUTBOUND_AUTH_TYPES: readonly OutboundAuthType[] = [
  'bearer',
  'header',
  'oauth2_client_credentials',
  'mtls',
  'token_exchange',
];

/** An OAuth client at a token endpoint, and what it asks for. */
export interface OAuthClient {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** `scope`, space-joined when sent. */
  scopes: string[];
  /** RFC 8693 `audience`. */
  audience?: string;
  /** RFC 8707 `resource`. */
  resource?: string;
  /** RFC 6749 §2.3.1: HTTP Basic (default) or `client_id`/`client_secret` in the form. */
  clientAuth: 'basic' | 'post';
}

/** A TLS client identity (PEM), and the CA that signs the remote's certificate when it is not a public one. */
export interface TlsIdentity {
  cert: string;
  key: string;
  ca?: string;
}

/**
 * Why a credential could not be had: its message says what failed (the token endpoint down, slow, or answering
 * something else than a token; no inbound JWT to exchange) and never carries a secret or the endpoint's body.
 */
export class OutboundAuthError extends Error {
  constructor(
    readonly code: 'token_endpoint' | 'no_subject' | 'unusable',
    message: string,
  ) {
    super(message);
    this.name = 'OutboundAuthError';
  }
}
