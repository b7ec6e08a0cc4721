// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { IdpTokenError, startIdp, type TestIdp } from '../helpers/oidc-provider.js';

interface Discovery {
  issuer: string;
  jwks_uri: string;
  token_endpoint: string;
  grant_types_supported: string[];
}

async function discover(idp: TestIdp): Promise<Discovery> {
  const res = await fetch(`${idp.issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  return (await res.json()) as Discovery;
}

/** Verifies as Arbiter will: the JWKS named by discovery (a fresh set each time: no cache between steps). */
async function verify(idp: TestIdp, token: string): Promise<JWTPayload> {
  const { jwks_uri } = await discover(idp);
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(jwks_uri)), {
    issuer: idp.issuer,
    audience: 'arbiter',
    algorithms: ['RS256'],
  });
  return payload;
}

describe('the local OpenID Provider (scripts/local-idp.mjs, npm run idp)', () => {
  let idp: TestIdp;
  before(async () => {
    idp = await startIdp();
  });
  after(() => idp.close());

  it('publishes discovery and a JWKS on loopback, with client_credentials', async () => {
    const d = await discover(idp);
    assert.match(idp.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(d.issuer, idp.issuer);
    assert.equal(d.jwks_uri, idp.jwksUri);
    assert.equal(d.token_endpoint, `${idp.issuer}/token`);
    assert.ok(d.grant_types_supported.includes('client_credentials'));
    const jwks = (await (await fetch(d.jwks_uri)).json()) as { keys: Record<string, unknown>[] };
    assert.deepEqual(
      jwks.keys.map((k) => k.kid),
      idp.kids(),
    );
    for (const k of jwks.keys) assert.equal(k.d, undefined, 'no private part is published');
  });

  it('issues a JWT access token for Arbiter that verifies against the discovered JWKS', async () => {
    const token = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'RS256', typ: 'at+jwt', kid: idp.kids()[0] });
    const claims = await verify(idp, token);
    assert.equal(claims.iss, idp.issuer);
    assert.equal(claims.aud, 'arbiter');
    assert.equal(claims.client_id, 'acme-agent');
    assert.equal(claims.sub, 'acme-agent');
    assert.equal(claims.org, 'acme');
    assert.equal(claims.scope, 'a2a:invoke');
    assert.equal(claims.roles, undefined);
    assert.equal(typeof claims.jti, 'string');
    assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), 3600);
  });

  it('defaults the resource to urn:arbiter, accepts it named, and refuses any other', async () => {
    const named = await verify(idp, await idp.token('acme-dashboard', { resource: 'urn:arbiter' }));
    const defaulted = await verify(idp, await idp.token('acme-dashboard'));
    assert.equal(named.aud, 'arbiter');
    assert.equal(defaulted.aud, 'arbiter');
    assert.equal(defaulted.scope, undefined, 'no scope asked, none given');
    const other = await idp.tokenResponse('acme-dashboard', { resource: 'urn:elsewhere' });
    assert.equal(other.status, 400);
    assert.equal(other.body.error, 'invalid_target');
  });

  it('grants several scopes a client may have, by either client authentication', async () => {
    const claims = await verify(
      idp,
      await idp.token('acme-dashboard', { scope: 'agents:read tasks:read', auth: 'post' }),
    );
    assert.equal(claims.scope, 'agents:read tasks:read');
    assert.equal(claims.org, 'acme');
  });

  it('gives operators a roles claim and no scope', async () => {
    const alice = await verify(idp, await idp.token('ops-alice'));
    assert.deepEqual(alice.roles, ['arbiter:admin']);
    assert.equal(alice.scope, undefined);
    assert.equal(alice.org, undefined);
    const audit = await verify(idp, await idp.token('ops-audit'));
    assert.deepEqual(audit.roles, ['arbiter:auditor']);
    assert.equal((await verify(idp, await idp.token('globex-agent', { scope: 'a2a:invoke' }))).org, 'globex');
  });

  it('refuses a scope the client is not allowed', async () => {
    const dashboard = await idp.tokenResponse('acme-dashboard', { scope: 'a2a:invoke' });
    assert.equal(dashboard.status, 400);
    assert.equal(dashboard.body.error, 'invalid_scope');
    const operator = await idp.tokenResponse('ops-alice', { scope: 'agents:write' });
    assert.equal(operator.status, 400);
    assert.equal(operator.body.error, 'invalid_scope');
    await assert.rejects(idp.token('acme-agent', { scope: 'agents:write' }), IdpTokenError);
  });

  it('refuses a wrong client secret with 401, and an unknown client', async () => {
    const wrong = await idp.tokenResponse('acme-agent', { secret: 'not-the-secret' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_client');
    const posted = await idp.tokenResponse('acme-agent', { secret: 'not-the-secret', auth: 'post' });
    assert.equal(posted.status, 401);
    const unknown = await idp.tokenResponse('nobody', { secret: 'nobody-secret' });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error, 'invalid_client');
  });
});

describe('the local IdP rotates its signing keys behind the same issuer', () => {
  let idp: TestIdp;
  before(async () => {
    idp = await startIdp(undefined, { ttlSeconds: 600 });
  });
  after(() => idp.close());

  it('signs with a new key after rotate(), keeps the old one published until retire()', async () => {
    const [oldKid] = idp.kids();
    const oldToken = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.equal(decodeProtectedHeader(oldToken).kid, oldKid);
    const first = await verify(idp, oldToken);
    assert.equal(first.exp! - first.iat!, 600);

    const newKid = await idp.rotate();
    assert.notEqual(newKid, oldKid);
    assert.deepEqual(idp.kids(), [newKid, oldKid]);
    assert.equal((await discover(idp)).issuer, idp.issuer, 'the issuer is unchanged');
    const newToken = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.equal(decodeProtectedHeader(newToken).kid, newKid);
    assert.equal((await verify(idp, newToken)).client_id, 'acme-agent');
    assert.equal((await verify(idp, oldToken)).client_id, 'acme-agent', 'a token of the old key still verifies');

    assert.throws(() => idp.retire(newKid), /signing key/);
    idp.retire(oldKid);
    assert.deepEqual(idp.kids(), [newKid]);
    await assert.rejects(verify(idp, oldToken), errors.JWKSNoMatchingKey);
    assert.equal((await verify(idp, newToken)).client_id, 'acme-agent');
    assert.equal(decodeProtectedHeader(await idp.token('ops-alice')).kid, newKid);
  });
});
