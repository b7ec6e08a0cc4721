import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { FakeIdp } from '../helpers/fake-idp.js';
import { newTenant } from '../helpers/factories.js';
import type { HttpClient } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The identity admin API: trusted issuers (`/v1/admin/issuers`), named
 * operator tokens (`/v1/admin/operators`), a tenant's `external_id`, tenants
 * without an opaque token, and the scopes of opaque tokens in listings.
 */

const AUDIENCE = 'arbiter';

/** An IdP's signing key and its public JWK (as its JWK Set serves it). */
interface Signer {
  key: CryptoKey;
  jwk: JWK;
}

async function signer(): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { key: privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' } };
}

/** A JWT access token of `issuer`, valid for ten minutes. */
function jwt(s: Signer, issuer: string, claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setSubject('svc-1')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(s.key);
}

/** The field names a 400 names. */
const fields = (body: { details?: { field: string }[] }): string[] => (body.details ?? []).map((d) => d.field).sort();

/** The audit rows of `action`, newest first. */
async function auditRows(admin: HttpClient, action: string): Promise<any[]> {
  const res = await admin.get('/v1/admin/audit?limit=100');
  assert.equal(res.status, 200, res.text);
  return (res.body.items as { action: string }[]).filter((r) => r.action === action);
}

describe('the identity admin API', () => {
  let server: TestServer;
  let idp: FakeIdp;
  let keys: Signer;

  before(async () => {
    idp = await FakeIdp.start();
    keys = await signer();
    idp.jwks = { keys: [keys.jwk] };
    server = await startTestServer({ env: { ARBITER_IDENTITY_ALLOWLIST: idp.hostPort } });
  });
  after(async () => {
    await server?.close();
    await idp?.close();
  });

  describe('trusted issuers', () => {
    it('create, read, list, update and delete one; each change audited as root; its tokens accepted while it is trusted', async () => {
      const tenant = await newTenant(server, 'issuer-tenant');
      const body = {
        issuer: idp.url,
        audiences: [AUDIENCE],
        tenant_claim: 'org',
        role_claim: 'roles',
        scope_map: { 'agent.call': ['a2a:invoke'] },
      };
      const set = await server.admin.patch(`/v1/admin/tenants/${tenant.id}`, { external_id: 'acme-idp' });
      assert.equal(set.status, 200, set.text);
      const created = await server.admin.post('/v1/admin/issuers', body);
      assert.equal(created.status, 201, created.text);
      const issuer = created.body;
      assert.match(issuer.id, /^[0-9a-f-]{36}$/);
      const { id: _id, created_at: _c, updated_at: _u, clock_skew_seconds: skew, ...rest } = issuer;
      assert.equal(typeof skew, 'number');
      assert.deepEqual(rest, {
        ...body,
        algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
        jwks_uri: null,
        tenant_id: null,
      });
      assert.deepEqual((await server.admin.get(`/v1/admin/issuers/${issuer.id}`)).body, issuer);
      const list = await server.admin.get('/v1/admin/issuers');
      assert.deepEqual(
        list.body.items.map((i: { id: string }) => i.id),
        [issuer.id],
      );

      // Used at once: a token of the issuer naming the tenant by its external_id, its scope mapped.
      const token = await jwt(keys, idp.url, { org: 'acme-idp', scope: 'agent.call' });
      const me = await server.as(token).get('/v1/me');
      assert.equal(me.status, 200, me.text);
      assert.equal(me.body.kind, 'tenant');
      assert.equal(me.body.tenant.id, tenant.id);
      assert.deepEqual(me.body.scopes, ['a2a:invoke']);
      assert.equal(me.body.credential.issuer_id, issuer.id);
      assert.equal((await server.as(token).get('/v1/agents')).status, 403, 'no agents:read');

      // 409: the same issuer twice.
      const again = await server.admin.post('/v1/admin/issuers', body);
      assert.equal(again.status, 409, again.text);
      assert.equal(again.body.code, 'conflict');

      // PATCH: keys left out unchanged; a new audience, and the token for the old one is refused from now on.
      const patched = await server.admin.patch(`/v1/admin/issuers/${issuer.id}`, { audiences: ['another'] });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(patched.body.audiences, ['another']);
      assert.equal(patched.body.tenant_claim, 'org');
      assert.deepEqual(patched.body.scope_map, body.scope_map);
      assert.equal((await server.as(token).get('/v1/me')).status, 401);
      const both = await server.admin.patch(`/v1/admin/issuers/${issuer.id}`, { tenant_id: tenant.id });
      assert.equal(both.status, 400, both.text);
      assert.deepEqual(fields(both.body), ['tenant_id']);
      const back = await server.admin.patch(`/v1/admin/issuers/${issuer.id}`, { audiences: [AUDIENCE] });
      assert.equal(back.status, 200, back.text);
      assert.equal((await server.as(token).get('/v1/me')).status, 200);

      // DELETE: 204, then it is gone (and so are its tokens).
      const removed = await server.admin.delete(`/v1/admin/issuers/${issuer.id}`);
      assert.equal(removed.status, 204, removed.text);
      assert.equal(removed.text, '');
      assert.equal((await server.admin.get(`/v1/admin/issuers/${issuer.id}`)).status, 404);
      assert.equal((await server.admin.patch(`/v1/admin/issuers/${issuer.id}`, { audiences: ['x'] })).status, 404);
      assert.equal((await server.admin.delete(`/v1/admin/issuers/${issuer.id}`)).status, 404);
      assert.equal((await server.admin.get('/v1/admin/issuers/not-a-uuid')).status, 404);
      assert.equal((await server.as(token).get('/v1/me')).status, 401);
      assert.deepEqual((await server.admin.get('/v1/admin/issuers')).body.items, []);

      for (const action of ['issuer.create', 'issuer.update', 'issuer.delete']) {
        const rows = await auditRows(server.admin, action);
        assert.ok(rows.length >= 1, action);
        for (const row of rows) {
          assert.equal(row.actor_id, 'root', action);
          assert.deepEqual(row.detail, { id: issuer.id, issuer: idp.url }, action);
          assert.match(row.request_id, /./, action);
        }
      }
      assert.equal((await auditRows(server.admin, 'issuer.update')).length, 2, 'one row per applied change');
    });

    it('a bad body is refused naming its fields: none and HMAC, both tenant mappings, no audiences, http off the allowlist', async () => {
      const base = { issuer: 'https://idp.example.com', audiences: [AUDIENCE], tenant_claim: 'org' };
      const cases: [string, Record<string, unknown>, string[]][] = [
        ['alg none', { ...base, algorithms: ['none'] }, ['algorithms']],
        ['HS256', { ...base, algorithms: ['RS256', 'HS256'] }, ['algorithms']],
        ['both tenant mappings', { ...base, tenant_id: randomUUID() }, ['tenant_id']],
        ['no audiences', { issuer: base.issuer, tenant_claim: 'org' }, ['audiences']],
        ['empty audiences', { ...base, audiences: [] }, ['audiences']],
        ['no mapping', { issuer: base.issuer, audiences: [AUDIENCE] }, ['tenant_claim']],
        ['http, not allow-listed', { ...base, issuer: 'http://127.0.0.2:9400' }, ['issuer']],
        ['http jwks_uri, not allow-listed', { ...base, jwks_uri: 'http://keys.example.com/jwks' }, ['jwks_uri']],
        ['a query', { ...base, issuer: 'https://idp.example.com/?x=1' }, ['issuer']],
        ['an unknown scope', { ...base, scope_map: { x: ['admin'] } }, ['scope_map']],
        ['an unknown tenant', { ...base, tenant_claim: undefined, tenant_id: randomUUID() }, ['tenant_id']],
        ['an unknown field', { ...base, secret: 'x' }, ['secret']],
        ['a port past 65535', { ...base, issuer: 'https://idp.example.com:99999' }, ['issuer']],
        ['a broken IP literal', { ...base, jwks_uri: 'https://[1:2' }, ['jwks_uri']],
        ['null scope_map', { ...base, scope_map: null }, ['scope_map']],
        [
          "a tenant's own IdP granting operator roles",
          { ...base, tenant_claim: undefined, tenant_id: randomUUID(), role_claim: 'roles' },
          ['role_claim'],
        ],
      ];
      for (const [what, body, expected] of cases) {
        const res = await server.admin.post('/v1/admin/issuers', body);
        assert.equal(res.status, 400, `${what}: ${res.text}`);
        assert.equal(res.body.code, 'validation_failed', what);
        assert.deepEqual(fields(res.body), expected, `${what}: ${res.text}`);
      }
      const none = await server.admin.post('/v1/admin/issuers', { ...base, algorithms: ['none'] });
      assert.match(none.body.details[0].messages[0], /none and HMAC are never accepted/);
      assert.deepEqual((await server.admin.get('/v1/admin/issuers')).body.items, [], 'nothing was created');
      // The allow-listed host may be plain http; a tenant_id mapping alone is enough.
      const tenant = await newTenant(server, 'bound-tenant');
      const bound = await server.admin.post('/v1/admin/issuers', {
        issuer: `${idp.url}/bound`,
        audiences: [AUDIENCE],
        tenant_id: tenant.id,
      });
      assert.equal(bound.status, 201, bound.text);
      // A patch is held to the same: null for a field it needs, no URL, or no mapping left; nothing changes.
      const patches: [Record<string, unknown>, string[]][] = [
        [{ issuer: null }, ['issuer']],
        [{ audiences: null, algorithms: null }, ['audiences', 'algorithms']],
        [{ clock_skew_seconds: null }, ['clock_skew_seconds']],
        [{ scope_map: null }, ['scope_map']],
        [{ issuer: 'http://127.0.0.1:70000/' }, ['issuer']],
        [{ tenant_id: null }, ['tenant_claim']],
      ];
      for (const [body, expected] of patches) {
        const res = await server.admin.patch(`/v1/admin/issuers/${bound.body.id}`, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.deepEqual(fields(res.body).sort(), [...expected].sort(), `${JSON.stringify(body)}: ${res.text}`);
      }
      assert.deepEqual((await server.admin.get(`/v1/admin/issuers/${bound.body.id}`)).body, bound.body);
      assert.equal((await server.admin.delete(`/v1/admin/issuers/${bound.body.id}`)).status, 204);
    });
  });

  describe('named operator tokens', () => {
    it('the token is shown once, works with its role, is listed without its secret, and is refused once revoked', async () => {
      const created = await server.admin.post('/v1/admin/operators', { name: 'alice', role: 'admin' });
      assert.equal(created.status, 201, created.text);
      const { token, ...alice } = created.body;
      assert.match(token, /^adm_[0-9a-f]{64}$/);
      assert.equal(alice.name, 'alice');
      assert.equal(alice.role, 'admin');
      assert.equal(alice.revoked_at, null);
      assert.ok(token.startsWith(alice.prefix), 'the prefix is the token’s start');

      const list = await server.admin.get('/v1/admin/operators');
      assert.equal(list.status, 200);
      assert.ok(!list.text.includes(token), 'the secret is never listed');
      const listed = list.body.items.find((o: { id: string }) => o.id === alice.id);
      assert.deepEqual(Object.keys(listed).sort(), Object.keys(alice).sort());
      assert.equal(listed.token, undefined);

      // Its role: an admin writes, and its changes are audited under its name.
      const as = server.as(token);
      const me = await as.get('/v1/me');
      assert.deepEqual(
        { kind: me.body.kind, role: me.body.role, actor: me.body.actor },
        { kind: 'admin', role: 'admin', actor: 'operator:alice' },
      );
      const made = await as.post('/v1/admin/tenants', { name: 'made-by-alice' });
      assert.equal(made.status, 201, made.text);
      const row = (await auditRows(server.admin, 'tenant.create')).find((r) => r.tenant_id === made.body.tenant.id);
      assert.equal(row.actor_id, 'operator:alice');
      assert.equal((await as.get('/v1/agents')).status, 403, 'an operator is no tenant');

      // 409: a second active token of the same name.
      const dup = await server.admin.post('/v1/admin/operators', { name: 'alice', role: 'auditor' });
      assert.equal(dup.status, 409, dup.text);

      // An auditor reads and cannot write: not tenants, not operators.
      const audit = await server.admin.post('/v1/admin/operators', { name: 'bob', role: 'auditor' });
      assert.equal(audit.status, 201, audit.text);
      const bob = server.as(audit.body.token);
      assert.equal((await bob.get('/v1/admin/tenants')).status, 200);
      assert.equal((await bob.get('/v1/admin/operators')).status, 200);
      for (const res of [
        await bob.post('/v1/admin/tenants', { name: 'by-an-auditor' }),
        await bob.post('/v1/admin/operators', { name: 'carol', role: 'admin' }),
        await bob.delete(`/v1/admin/operators/${alice.id}`),
        await bob.post('/v1/admin/issuers', { issuer: 'https://x.example.com', audiences: ['a'], tenant_claim: 'o' }),
      ]) {
        assert.equal(res.status, 403, res.text);
        assert.match(res.body.error, /auditor role may only read/);
      }

      // Revoked: the next request with it is a 401; it is listed as revoked; the name is free again.
      const revoked = await server.admin.delete(`/v1/admin/operators/${alice.id}`);
      assert.equal(revoked.status, 200, revoked.text);
      assert.ok(revoked.body.revoked_at);
      assert.equal((await as.get('/v1/admin/tenants')).status, 401);
      assert.equal((await as.get('/v1/me')).status, 401);
      assert.equal((await server.admin.delete(`/v1/admin/operators/${alice.id}`)).status, 404);
      const after = (await server.admin.get('/v1/admin/operators')).body.items;
      assert.ok(after.find((o: { id: string }) => o.id === alice.id).revoked_at);
      const reused = await server.admin.post('/v1/admin/operators', { name: 'alice', role: 'auditor' });
      assert.equal(reused.status, 201, reused.text);

      for (const action of ['operator.create', 'operator.revoke']) {
        const rows = await auditRows(server.admin, action);
        assert.ok(rows.length >= 1, action);
        for (const r of rows) assert.equal(r.actor_id, 'root', action);
      }
      const bad = await server.admin.post('/v1/admin/operators', { name: 'dave', role: 'owner' });
      assert.equal(bad.status, 400);
      assert.deepEqual(fields(bad.body), ['role']);
    });
  });

  describe('tenants', () => {
    it('external_id: set, unique among tenants (409), cleared by null', async () => {
      const a = await newTenant(server, 'ext-a');
      const b = await newTenant(server, 'ext-b');
      const set = await server.admin.patch(`/v1/admin/tenants/${a.id}`, { external_id: 'org-42' });
      assert.equal(set.status, 200, set.text);
      assert.equal(set.body.external_id, 'org-42');
      assert.equal(set.body.disabled, false, 'only external_id changed');
      const taken = await server.admin.patch(`/v1/admin/tenants/${b.id}`, { external_id: 'org-42' });
      assert.equal(taken.status, 409, taken.text);
      const created = await server.admin.post('/v1/admin/tenants', { name: 'ext-c', external_id: 'org-42' });
      assert.equal(created.status, 409, created.text);
      assert.equal((await server.admin.get(`/v1/admin/tenants/${b.id}`)).body.external_id, null);
      const bad = await server.admin.patch(`/v1/admin/tenants/${b.id}`, { external_id: 'has space' });
      assert.equal(bad.status, 400);
      assert.deepEqual(fields(bad.body), ['external_id']);

      const cleared = await server.admin.patch(`/v1/admin/tenants/${a.id}`, { external_id: null });
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.external_id, null);
      const moved = await server.admin.patch(`/v1/admin/tenants/${b.id}`, { external_id: 'org-42' });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body.external_id, 'org-42');
      const rows = (await auditRows(server.admin, 'tenant.external_id')).filter((r) => r.tenant_id === a.id);
      assert.deepEqual(
        rows.map((r) => r.detail.external_id),
        [null, 'org-42'],
      );
    });

    it('a tenant created with issue_token false has no token', async () => {
      const res = await server.admin.post('/v1/admin/tenants', { name: 'jwt-only', issue_token: false });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.token, undefined);
      assert.ok(!/atr_/.test(res.text));
      const tokens = await server.admin.get(`/v1/admin/tenants/${res.body.tenant.id}/tokens`);
      assert.equal(tokens.status, 200);
      assert.deepEqual(tokens.body.items, []);
    });

    it('opaque tokens carry their scopes: given at creation, issue and rotation (default all four), shown in listings', async () => {
      const created = await server.admin.post('/v1/admin/tenants', { name: 'scoped', scopes: ['tasks:read'] });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.token.scopes, ['tasks:read']);
      const id = created.body.tenant.id as string;
      const extra = await server.admin.post(`/v1/admin/tenants/${id}/tokens`, {});
      assert.equal(extra.status, 201, extra.text);
      assert.deepEqual(extra.body.scopes, ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read']);
      const two = await server.admin.post(`/v1/admin/tenants/${id}/tokens`, { scopes: ['agents:read', 'a2a:invoke'] });
      assert.equal(two.status, 201, two.text);

      const listed = await server.admin.get(`/v1/admin/tenants/${id}/tokens`);
      const byId = new Map(
        listed.body.items.map((t: { id: string; scopes: string[] }) => [t.id, [...t.scopes].sort()]),
      );
      assert.deepEqual(byId.get(created.body.token.id), ['tasks:read']);
      assert.deepEqual(byId.get(extra.body.id), ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read']);
      assert.deepEqual(byId.get(two.body.id), ['a2a:invoke', 'agents:read']);
      const me = await server.as(created.body.token.token).get('/v1/me');
      assert.deepEqual(me.body.scopes, ['tasks:read']);

      const rotated = await server.admin.post(`/v1/admin/tenants/${id}/tokens/rotate`, { scopes: ['agents:write'] });
      assert.equal(rotated.status, 201, rotated.text);
      assert.deepEqual(rotated.body.token.scopes, ['agents:write']);
      const after = await server.admin.get(`/v1/admin/tenants/${id}/tokens`);
      const live = after.body.items.filter((t: { revoked_at: string | null }) => t.revoked_at === null);
      assert.deepEqual(
        live.map((t: { scopes: string[] }) => t.scopes),
        [['agents:write']],
      );

      for (const scopes of [[], ['admin'], 'tasks:read']) {
        const res = await server.admin.post(`/v1/admin/tenants/${id}/tokens`, { scopes });
        assert.equal(res.status, 400, `${JSON.stringify(scopes)}: ${res.text}`);
        assert.deepEqual(fields(res.body), ['scopes']);
      }
    });
  });
});

/**
 * Two replicas (in this process) on one PostgreSQL: an identity change is in
 * force on both when the admin call answers.
 */
describe('identity changes across two replicas', { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' }, () => {
  let db: TestDatabase;
  let idp: FakeIdp;
  let keys: Signer;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    db = await freshDatabase();
    idp = await FakeIdp.start();
    keys = await signer();
    idp.jwks = { keys: [keys.jwk] };
    const env = { ARBITER_IDENTITY_ALLOWLIST: idp.hostPort };
    a = await startTestServer({ db, env });
    b = await startTestServer({ db, env });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await idp?.close();
    await db?.drop();
  });

  it('an issuer created on A is used on B when the create answers; removed on A, refused on B at once', async () => {
    const tenant = await newTenant(a, 'replicated');
    const token = await jwt(keys, idp.url, { scope: 'agents:read' });
    assert.equal((await b.as(token).get('/v1/me')).status, 401, 'not trusted yet');
    const created = await a.admin.post('/v1/admin/issuers', {
      issuer: idp.url,
      audiences: [AUDIENCE],
      tenant_id: tenant.id,
    });
    assert.equal(created.status, 201, created.text);
    const me = await b.as(token).get('/v1/me');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.tenant.id, tenant.id);
    assert.equal((await b.admin.get(`/v1/admin/issuers/${created.body.id}`)).status, 200);
    assert.equal((await a.admin.delete(`/v1/admin/issuers/${created.body.id}`)).status, 204);
    assert.equal((await b.as(token).get('/v1/me')).status, 401);
  });

  it('an operator token revoked on A is refused on B at once', async () => {
    const created = await a.admin.post('/v1/admin/operators', { name: 'replicated', role: 'admin' });
    assert.equal(created.status, 201, created.text);
    const onB = b.as(created.body.token);
    // Known to B first (B keeps verified tokens in memory): the revocation must reach that.
    assert.equal((await onB.get('/v1/admin/tenants')).status, 200);
    assert.equal((await onB.get('/v1/admin/tenants')).status, 200);
    assert.equal((await a.admin.delete(`/v1/admin/operators/${created.body.id}`)).status, 200);
    assert.equal((await onB.get('/v1/admin/tenants')).status, 401);
  });
});
