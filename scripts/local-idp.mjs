#!/usr/bin/env node
// A real OpenID Provider on loopback (oidc-provider), for the identity feature: it issues RS256-signed JWT access
// tokens for Arbiter (`aud: arbiter`) through the client_credentials grant. The end-to-end tests start it in-process
// (test/helpers/oidc-provider.ts); `npm run idp` runs it on IDP_PORT (default 9400) until killed.
//
// Keys rotate without a restart: oidc-provider fixes its keystore when it is constructed, so rotate() and
// retire() build a new Provider with the new key set behind the same HTTP server, port and issuer. Nothing is
// lost by that: client_credentials keeps no session or grant, and a JWT access token is checked against the
// published JWKS, not against the provider's memory.
import { createServer } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { createLocalJWKSet, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT } from 'jose';

/** The resource indicator of Arbiter; a token request without `resource` gets it. */
export const ARBITER_RESOURCE = 'urn:arbiter';
/** The `aud` of every access token. */
export const ARBITER_AUDIENCE = 'arbiter';
/** The scopes Arbiter knows (operators use scope-less tokens with a `roles` claim instead). */
export const ARBITER_SCOPES = ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'];

/**
 * The demo clients: the secret of each is `<id>-secret`. `scopes` is what the client may request (a token without
 * `scope=` carries none); `org` becomes the `org` claim (a tenant's external id), `roles` the `roles` claim.
 */
export const DEMO_CLIENTS = Object.freeze([
  { id: 'acme-agent', org: 'acme', scopes: ['a2a:invoke'] },
  { id: 'acme-dashboard', org: 'acme', scopes: ['agents:read', 'tasks:read'] },
  { id: 'ops-alice', roles: ['arbiter:admin'], scopes: [] },
  { id: 'ops-audit', roles: ['arbiter:auditor'], scopes: [] },
  { id: 'globex-agent', org: 'globex', scopes: ['a2a:invoke'] },
]);

/** RFC 8693: the grant type of a token exchange, and the one token type it takes and issues here. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** The secret of a demo client. */
export function clientSecret(id) {
  return `${id}-secret`;
}

/** A new RS256 signing key as a private JWK, with a fresh `kid`. */
export async function generateSigningKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

let oidc;
/** oidc-provider, imported once; its "Unsupported runtime" warning on Node 20 is harmless here and left out. */
async function loadOidcProvider() {
  if (oidc) return oidc;
  const warn = console.warn;
  console.warn = (...args) => {
    if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime')) return;
    warn(...args);
  };
  try {
    oidc = await import('oidc-provider');
  } finally {
    console.warn = warn;
  }
  return oidc;
}

function toMetadata(client) {
  return {
    client_id: client.id,
    client_secret: client.secret ?? clientSecret(client.id),
    grant_types: client.tokenExchange ? ['client_credentials', TOKEN_EXCHANGE] : ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    // Either method is accepted for a secret (client_secret_post too): oidc-provider treats the two alike.
    token_endpoint_auth_method: 'client_secret_basic',
    // A client without scopes gets `openid` only, which no Arbiter token carries: an empty list would mean "any".
    scope: client.scopes?.length ? client.scopes.join(' ') : 'openid',
    org: client.org,
    roles: client.roles,
  };
}

/**
 * oidc-provider's storage, in memory. Its own default does the same but warns on every start; a JWT access token
 * from client_credentials is not even stored, so there is nothing here to persist.
 */
class MemoryAdapter {
  constructor(stores, model) {
    this.store = stores.get(model) ?? new Map();
    stores.set(model, this.store);
  }

  upsert(id, payload, expiresIn) {
    this.store.set(id, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
  }

  find(id) {
    const entry = this.store.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.store.delete(id);
      return undefined;
    }
    return entry.payload;
  }

  findByUid(uid) {
    for (const [id, { payload }] of this.store) if (payload.uid === uid) return this.find(id);
    return undefined;
  }

  findByUserCode(userCode) {
    for (const [id, { payload }] of this.store) if (payload.userCode === userCode) return this.find(id);
    return undefined;
  }

  consume(id) {
    const entry = this.store.get(id);
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  destroy(id) {
    this.store.delete(id);
  }

  revokeByGrantId(grantId) {
    for (const [id, { payload }] of this.store) if (payload.grantId === grantId) this.store.delete(id);
  }
}

function configuration({ clients, keys, ttlSeconds, cookieKeys, stores, errors, resources }) {
  const scopes = [...new Set([...ARBITER_SCOPES, ...clients.flatMap((c) => c.scopes ?? [])])];
  return {
    adapter: (model) => new MemoryAdapter(stores, model),
    clients: clients.map(toMetadata),
    jwks: { keys },
    scopes,
    cookies: { keys: cookieKeys },
    extraClientMetadata: {
      properties: ['org', 'roles'],
      validator(_ctx, key, value) {
        if (value === undefined) return;
        if (key === 'org' && typeof value !== 'string') throw new TypeError('org must be a string');
        if (key === 'roles' && !(Array.isArray(value) && value.every((r) => typeof r === 'string')))
          throw new TypeError('roles must be an array of strings');
      },
    },
    // The claims Arbiter maps to a tenant and to operator roles; absent when the client has none.
    extraTokenClaims(ctx, _token) {
      const client = ctx.oidc.client;
      const claims = {};
      if (client?.org !== undefined) claims.org = client.org;
      if (client?.roles !== undefined) claims.roles = client.roles;
      return claims;
    },
    ttl: { ClientCredentials: ttlSeconds },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => ARBITER_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, resource) {
          const audience = resource === ARBITER_RESOURCE ? ARBITER_AUDIENCE : resources[resource];
          if (!audience) throw new errors.InvalidTarget();
          return {
            audience,
            scope: scopes.join(' '),
            accessTokenFormat: 'jwt',
            accessTokenTTL: ttlSeconds,
            // The first key signs: named by kid so that the choice never depends on the keystore's ordering.
            jwt: { sign: { alg: keys[0].alg ?? 'RS256', kid: keys[0].kid } },
          };
        },
      },
    },
    // No browser flows here; oidc-provider still wants a URL for them.
    interactions: { url: () => '/interaction/unsupported' },
    // Errors go to the client as OAuth errors; the server's own log stays quiet.
    renderError(ctx, out) {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
}

/**
 * Starts the provider. Options: `port` (default IDP_PORT or 9400; 0 = any free port), `host` (127.0.0.1), `clients`
 * (default DEMO_CLIENTS), `keys` (private JWKs, each with a `kid`; the first signs; default one new RS256 key),
 * `ttlSeconds` (access token lifetime, default 3600).
 */
/**
 * RFC 8693 token exchange (oidc-provider has no such grant; `registerGrantType` adds one): the `subject_token` must
 * be an access token this IdP issued (any audience, unexpired); the issued token keeps its subject, is for the
 * `resource` (one of the resource servers) or the `audience` asked for, and names the acting party in `act` — the
 * `actor_token`'s subject when one is sent (a token of this IdP too), else the authenticated client.
 */
function registerTokenExchange(provider, { issuer, keys, ttlSeconds, resources, errors }) {
  const jwks = createLocalJWKSet({ keys: keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub) });
  const verify = async (token, what) => {
    try {
      return (await jwtVerify(token, jwks, { issuer })).payload;
    } catch {
      throw new errors.InvalidGrant(`${what} is not a valid access token of this issuer`);
    }
  };
  const params = ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type', 'requested_token_type'];
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const p = ctx.oidc.params;
      if (!p.subject_token || p.subject_token_type !== ACCESS_TOKEN_TYPE)
        throw new errors.InvalidRequest('subject_token and subject_token_type (an access token) are required');
      if (p.requested_token_type && p.requested_token_type !== ACCESS_TOKEN_TYPE)
        throw new errors.InvalidRequest('only access tokens are issued');
      const subject = await verify(p.subject_token, 'subject_token');
      let actor = ctx.oidc.client.clientId;
      if (p.actor_token) {
        if (p.actor_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('actor_token_type is required');
        const claims = await verify(p.actor_token, 'actor_token');
        actor = claims.sub ?? claims.client_id;
      }
      const audience = p.resource ? resources[p.resource] : p.audience;
      if (!audience) throw new errors.InvalidTarget();
      const key = keys[0];
      const accessToken = await new SignJWT({
        client_id: ctx.oidc.client.clientId,
        act: { sub: actor },
        ...(p.scope ? { scope: p.scope } : {}),
        ...(subject.org !== undefined ? { org: subject.org } : {}),
      })
        .setProtectedHeader({ alg: key.alg ?? 'RS256', kid: key.kid, typ: 'at+jwt' })
        .setIssuer(issuer)
        .setSubject(String(subject.sub ?? subject.client_id))
        .setAudience(audience)
        .setIssuedAt()
        .setJti(randomUUID())
        .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
        .sign(await importJWK(key, key.alg ?? 'RS256'));
      ctx.body = {
        access_token: accessToken,
        issued_token_type: ACCESS_TOKEN_TYPE,
        token_type: 'Bearer',
        expires_in: ttlSeconds,
      };
    },
    [...params, 'audience', 'resource', 'scope'],
  );
}

export async function startLocalIdp(options = {}) {
  const { Provider, errors } = await loadOidcProvider();
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? Number(process.env.IDP_PORT ?? 9400);
  const clients = (options.clients ?? DEMO_CLIENTS).map((c) => ({ ...c, scopes: [...(c.scopes ?? [])] }));
  const ttlSeconds = options.ttlSeconds ?? 3600;
  // Resource servers besides Arbiter (the remote agents of Arbiter's outbound calls): resource URI → audience.
  const resources = { ...(options.resources ?? {}) };
  let keys = options.keys ? options.keys.map((k) => ({ ...k })) : [await generateSigningKey()];
  if (keys.length === 0 || keys.some((k) => typeof k.kid !== 'string' || !k.kid))
    throw new TypeError('keys: at least one private JWK, each with a kid');
  const cookieKeys = [randomBytes(32).toString('base64url')];
  // Kept across rotations, like the issuer: one IdP, several Provider instances over time.
  const stores = new Map();

  let handler = () => undefined;
  const server = createServer((req, res) => handler(req, res));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address().port;
  const issuer = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;

  function mount() {
    const provider = new Provider(
      issuer,
      configuration({ clients, keys, ttlSeconds, cookieKeys, stores, errors, resources }),
    );
    registerTokenExchange(provider, { issuer, keys, ttlSeconds, resources, errors });
    // The server's own errors are answered to the client; oidc-provider would also print them.
    provider.on('server_error', () => undefined);
    handler = provider.callback();
  }
  mount();

  const kids = () => keys.map((k) => k.kid);
  return {
    issuer,
    port: bound,
    clients: clients.map((c) => ({ ...c, secret: c.secret ?? clientSecret(c.id) })),
    kids,
    /** Adds a new signing key in front (new tokens carry its kid); the old ones stay published. Returns its kid. */
    async rotate(key) {
      const next = key ? { ...key } : await generateSigningKey();
      if (typeof next.kid !== 'string' || kids().includes(next.kid))
        throw new TypeError('rotate: a key with a new kid');
      keys = [next, ...keys];
      mount();
      return next.kid;
    },
    /** Stops publishing a key that no longer signs (not the current signing key). */
    retire(kid) {
      if (!kids().includes(kid)) throw new Error(`retire: no key ${kid}`);
      if (keys[0].kid === kid) throw new Error('retire: the signing key cannot be retired; rotate first');
      keys = keys.filter((k) => k.kid !== kid);
      mount();
    },
    close() {
      return new Promise((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}

async function main() {
  const idp = await startLocalIdp();
  const names = idp.clients.map((c) => c.id).join(', ');
  console.log(
    `local IdP at ${idp.issuer} (audience ${ARBITER_AUDIENCE}); clients ${names} (secret <id>-secret); try: ` +
      `curl -u acme-agent:acme-agent-secret -d grant_type=client_credentials -d scope=a2a:invoke ${idp.issuer}/token`,
  );
  const stop = () => {
    idp.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
