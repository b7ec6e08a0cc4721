import { createHash, X509Certificate } from 'node:crypto';
import type { SubjectToken } from '../common/subject-token.js';
import { OutboundAuthError, type OAuthClient, type OutboundAuth, type TlsIdentity } from './outbound-auth.types.js';
import { capBytes } from '../common/text.js';
import { MAX_TOKEN_LENGTH, stripIssued } from './issued-tokens.js';
import { TokenCache } from './token-cache.js';
import type { IssuedToken } from './token-endpoint.js';

/** What one outbound request is made with: the caller's cancellation, and the JWT of whom it is made for. */
export interface CallContext {
  signal?: AbortSignal;
  subject?: SubjectToken;
}

/** A credential in use: what to add to a request to the remote's own origin. */
export interface Credential {
  /** A TLS client identity to present (mTLS). */
  readonly tls?: TlsIdentity;
  /** Headers to add; `OutboundAuthError` when they cannot be had. */
  headers(ctx: CallContext): Promise<Record<string, string>>;
  /**
   * The remote answered 401 to a request carrying `sent`: drops the token it refused and says whether fresh
   * headers may be worth one more try (a token that can be renewed); static credentials answer false.
   */
  refused(sent: Record<string, string>, ctx: CallContext): boolean;
}

/** Fetches a token for an OAuth client: the grant's own form parameters. */
export type TokenFetcher = (client: OAuthClient, params: Record<string, string>) => Promise<IssuedToken>;

const NO_RETRY = (): boolean => false;
const bearerOf = (sent: Record<string, string>): string => (sent.authorization ?? '').replace(/^Bearer /, '');
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
/** Exchanged tokens kept per client: one per inbound caller, the oldest dropped first. */
const MAX_SUBJECTS = 1000;

/** The credential for `auth`; OAuth tokens are fetched by `fetchToken`. */
export function credentialOf(auth: OutboundAuth, fetchToken: TokenFetcher): Credential {
  switch (auth.type) {
    case 'none':
      return { headers: () => Promise.resolve({}), refused: NO_RETRY };
    case 'bearer':
      return {
        headers: () =>
          Promise.resolve<Record<string, string>>(auth.token ? { authorization: `Bearer ${auth.token}` } : {}),
        refused: NO_RETRY,
      };
    case 'header':
      return { headers: () => Promise.resolve({ [auth.name]: auth.value }), refused: NO_RETRY };
    case 'mtls': {
      // A certificate that expires while loaded: the call says so rather than fail the handshake.
      const notAfter = Date.parse(new X509Certificate(auth.tls.cert).validTo);
      return {
        tls: auth.tls,
        headers: () =>
          Date.now() > notAfter
            ? Promise.reject(
                new OutboundAuthError(
                  'unusable',
                  `the client certificate expired on ${new Date(notAfter).toISOString()}`,
                ),
              )
            : Promise.resolve({}),
        refused: NO_RETRY,
      };
    }
    case 'oauth2_client_credentials': {
      const cache = new TokenCache(() => fetchToken(auth, { grant_type: 'client_credentials' }));
      return {
        headers: async (ctx) => ({ authorization: `Bearer ${await cache.get(ctx.signal)}` }),
        refused: (sent) => {
          cache.invalidate(bearerOf(sent));
          return true;
        },
      };
    }
    case 'token_exchange':
      return tokenExchange(auth, fetchToken);
  }
}

/**
 * RFC 8693 on behalf of the inbound caller: their JWT is the `subject_token`, Arbiter authenticates as the client
 * and, with `actorToken`, also sends its own client-credentials token as the `actor_token` (the issued token's
 * `act` names Arbiter). Each caller's exchanged token is cached until shortly before it expires.
 */
function tokenExchange(auth: Extract<OutboundAuth, { type: 'token_exchange' }>, fetchToken: TokenFetcher): Credential {
  const actor = auth.actorToken
    ? new TokenCache(() =>
        fetchToken({ ...auth, audience: undefined, resource: undefined }, { grant_type: 'client_credentials' }),
      )
    : undefined;
  const perSubject = new Map<string, TokenCache>();
  const cacheFor = (subject: SubjectToken): TokenCache => {
    const key = createHash('sha256').update(subject.reveal()).digest('base64url');
    let cache = perSubject.get(key);
    if (!cache) {
      if (perSubject.size >= MAX_SUBJECTS) perSubject.delete(perSubject.keys().next().value as string);
      cache = new TokenCache(async () => {
        const params: Record<string, string> = {
          grant_type: TOKEN_EXCHANGE,
          subject_token: subject.reveal(),
          subject_token_type: ACCESS_TOKEN,
          requested_token_type: ACCESS_TOKEN,
        };
        if (actor) Object.assign(params, { actor_token: await actor.get(), actor_token_type: ACCESS_TOKEN });
        return fetchToken(auth, params);
      });
      perSubject.set(key, cache);
    }
    return cache;
  };
  return {
    headers: async (ctx) => {
      if (!ctx.subject) {
        throw new OutboundAuthError(
          'no_subject',
          "token_exchange acts on behalf of the caller, and this call has no caller's JWT to exchange (the request was made with an opaque token, or by no one)",
        );
      }
      return { authorization: `Bearer ${await cacheFor(ctx.subject).get(ctx.signal)}` };
    },
    refused: (sent, ctx) => {
      if (!ctx.subject) return false;
      cacheFor(ctx.subject).invalidate(bearerOf(sent));
      return true;
    },
  };
}

/**
 * Sends a request with `credential` (to the remote's own origin only: elsewhere, nothing is added). On a 401 to a
 * renewable token, the token is dropped and the request sent once more with a fresh one — once: a second 401 is
 * the answer. `optional` (a card fetch) sends without credentials when there is no caller to act for.
 */
export async function sendWithCredential<R extends { status: number }>(
  credential: Credential | undefined,
  ctx: CallContext,
  sameOrigin: boolean,
  send: (headers: Record<string, string>, tls: TlsIdentity | undefined) => Promise<R>,
  discard: (res: R) => void,
  optional = false,
): Promise<R> {
  if (!credential || !sameOrigin) return send({}, undefined);
  let headers: Record<string, string>;
  try {
    headers = await credential.headers(ctx);
  } catch (err) {
    if (optional && err instanceof OutboundAuthError && err.code === 'no_subject') return send({}, credential.tls);
    throw err;
  }
  const res = await send(headers, credential.tls);
  if (res.status !== 401 || !credential.refused(headers, ctx)) return res;
  discard(res);
  return send(await credential.headers(ctx), credential.tls);
}

/** The secrets of `auth` (a token, a header's value, a client secret, a private key), to strip from what is shown. */
export function secretsOf(auth: OutboundAuth): string[] {
  switch (auth.type) {
    case 'bearer':
      return [auth.token];
    case 'header':
      return [auth.value];
    case 'oauth2_client_credentials':
    case 'token_exchange':
      return [auth.clientSecret];
    case 'mtls':
      return [auth.tls.key];
    case 'none':
      return [];
  }
}

/**
 * `strip(text, secrets)` cut to `cap` bytes. Stripped from what a cut to `cap` keeps and a token's length beyond,
 * then cut: the search stays bounded on a long text, and a token that begins before the cut is found whole.
 */
export function strippedWithin(
  strip: (text: string, secrets: readonly string[]) => string,
  text: string,
  secrets: readonly string[],
  cap: number,
): string {
  const head = text.length > cap + MAX_TOKEN_LENGTH ? text.slice(0, cap + MAX_TOKEN_LENGTH) : text;
  return capBytes(strip(head, secrets), cap);
}

/**
 * Text from a remote with the secrets Arbiter knows taken out: `secrets` (an entry's, a provider's key) and the
 * access tokens it was issued. For what a remote answers when it succeeds, which may hold tokens of its own.
 */
export function stripKnownSecrets(text: string, secrets: readonly string[]): string {
  let out = stripIssued(text);
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

/**
 * Text from a remote (an error's message) with secrets taken out: the entry's own (`secrets`), the access tokens
 * Arbiter was issued for remotes (`stripIssued`: a remote may quote the one it was sent, bare), any bearer token
 * and anything shaped like a JWT.
 */
export function stripSecrets(text: string, secrets: readonly string[]): string {
  return stripKnownSecrets(text, secrets)
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [redacted]')
    .replace(/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, '[redacted]');
}
