import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { a2a, V03 } from '../helpers/a2a.js';
import { newTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('tenants and bearer auth (/v1/admin/*)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close();
  });

  describe('admin token', () => {
    it('missing → 401 with WWW-Authenticate: Bearer and a JSON {error}', async () => {
      const res = await server.http.get('/v1/admin/tenants');
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      assert.equal(typeof res.body.error, 'string');
    });

    it('wrong → 401; a valid tenant token → 403 that names the scope', async () => {
      const flipped = server.adminToken.slice(0, -1) + (server.adminToken.endsWith('0') ? '1' : '0');
      for (const token of [`${server.adminToken}x`, 'adm_short', flipped]) {
        const res = await server.as(token).get('/v1/admin/tenants');
        assert.equal(res.status, 401, token);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
      const t = await newTenant(server);
      const res = await t.client.get('/v1/admin/tenants');
      assert.equal(res.status, 403);
      assert.match(res.body.error, /needs the admin token/);
      // A revoked tenant token is not a valid token of the other kind: 401.
      assert.equal((await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${t.tokenId}`)).status, 200);
      assert.equal((await t.client.get('/v1/admin/tenants')).status, 401);
    });

    it('on tenant routes: the admin token → 403, a look-alike tenant token → 401', async () => {
      for (const path of ['/v1/agents', '/v1/requests']) {
        const res = await server.admin.get(path);
        assert.equal(res.status, 403, path);
        assert.match(res.body.error, /needs a tenant token/);
      }
      const rpc = await a2a(server.url, server.adminToken, 'any', V03).post('tasks/get', { id: 'x' });
      const body = JSON.stringify(await rpc.json());
      assert.equal(rpc.status, 403, body);
      assert.match(body, /PERMISSION_DENIED|needs a tenant token/);
      const rest = await server.admin.get('/v1/a2a/agents/any/tasks/x');
      assert.equal(rest.status, 403, rest.text);
      assert.equal((await server.as(`atr_${'x'.repeat(40)}`).get('/v1/agents')).status, 401);
      assert.equal((await server.as(`adm_${'x'.repeat(40)}`).get('/v1/agents')).status, 401);
    });

    it('a malformed Authorization header → 401', async () => {
      for (const h of ['Basic abc', 'Bearer', 'Bearer  two words', 'bearer']) {
        const res = await server.http.get('/v1/admin/tenants', { authorization: h });
        assert.equal(res.status, 401, h);
      }
    });

    it('a token in the query string is not accepted', async () => {
      const res = await server.http.get(`/v1/admin/tenants?access_token=${server.adminToken}`);
      assert.equal(res.status, 401);
    });
  });

  describe('lifecycle', () => {
    it('create → 201 with the tenant and an atr_ token shown once', async () => {
      const res = await server.admin.post('/v1/admin/tenants', { name: '  Team Alpha  ' });
      assert.equal(res.status, 201);
      assert.equal(res.body.tenant.name, 'Team Alpha');
      assert.equal(res.body.tenant.disabled, false);
      assert.match(res.body.token.token, /^atr_[0-9a-f]{64}$/);
      assert.equal(res.body.token.prefix, res.body.token.token.slice(0, 12));
      const got = await server.admin.get(`/v1/admin/tenants/${res.body.tenant.id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, res.body.tenant);
      assert.ok(!got.text.includes(res.body.token.token), 'the token is never shown again');
      const tokens = await server.admin.get(`/v1/admin/tenants/${res.body.tenant.id}/tokens`);
      assert.equal(tokens.body.items.length, 1);
      assert.equal(tokens.body.items[0].token, undefined);
    });

    it('the token works; rotate → old token 401, new works; disable → 401; enable → works', async () => {
      const t = await newTenant(server);
      assert.equal((await t.client.get('/v1/agents')).status, 200);

      const rot = await server.admin.post(`/v1/admin/tenants/${t.id}/tokens/rotate`);
      assert.equal(rot.status, 201);
      assert.deepEqual(rot.body.revoked, [t.tokenId]);
      const fresh = server.as(rot.body.token.token);
      const old = await t.client.get('/v1/agents');
      assert.equal(old.status, 401);
      assert.equal(old.body.error, 'invalid or revoked token');
      assert.equal((await fresh.get('/v1/agents')).status, 200);

      const dis = await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true });
      assert.equal(dis.status, 200);
      assert.equal(dis.body.disabled, true);
      assert.ok(dis.body.disabled_at);
      const refused = await fresh.get('/v1/agents');
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error, 'tenant is disabled');
      assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer/);

      const en = await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: false });
      assert.equal(en.body.disabled, false);
      assert.equal(en.body.disabled_at, null);
      assert.equal((await fresh.get('/v1/agents')).status, 200);
    });

    it('an additional token keeps the first valid; revoking one leaves the other', async () => {
      const t = await newTenant(server);
      const extra = await server.admin.post(`/v1/admin/tenants/${t.id}/tokens`);
      assert.equal(extra.status, 201);
      const second = server.as(extra.body.token);
      assert.equal((await t.client.get('/v1/agents')).status, 200);
      assert.equal((await second.get('/v1/agents')).status, 200);

      const rev = await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${t.tokenId}`);
      assert.equal(rev.status, 200);
      assert.ok(rev.body.revoked_at);
      assert.equal((await t.client.get('/v1/agents')).status, 401);
      assert.equal((await second.get('/v1/agents')).status, 200);
      // Revoking again, or a token of another tenant, is a 404.
      assert.equal((await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${t.tokenId}`)).status, 404);
      const other = await newTenant(server);
      assert.equal((await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${other.tokenId}`)).status, 404);
      assert.equal((await other.client.get('/v1/agents')).status, 200);
    });

    it('lists tenants newest first with a cursor and no silent cap', async () => {
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await newTenant(server, `page-${i}`));
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor ? `&cursor=${cursor}` : '';
        const res = await server.admin.get(`/v1/admin/tenants?limit=2${q}`);
        assert.equal(res.status, 200);
        assert.ok(res.body.items.length <= 2);
        seen.push(...res.body.items.map((t: { id: string }) => t.id));
        cursor = res.body.next_cursor;
      } while (cursor);
      for (const t of made) assert.ok(seen.includes(t.id));
      assert.equal(new Set(seen).size, seen.length, 'no tenant twice');
      const firstFive = seen.slice(0, 5);
      assert.deepEqual(firstFive, made.map((t) => t.id).reverse());
    });
  });

  describe('bad input', () => {
    it('names the failing field', async () => {
      const cases: [unknown, string][] = [
        [{}, 'name'],
        [{ name: '' }, 'name'],
        [{ name: '   ' }, 'name'],
        [{ name: 42 }, 'name'],
        [{ name: 'x'.repeat(129) }, 'name'],
        [{ name: 'a\u0000b' }, 'name'],
        [{ name: 'ok', extra: true }, 'extra'],
        [[1, 2], 'body'],
      ];
      for (const [body, field] of cases) {
        const res = await server.admin.post('/v1/admin/tenants', body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.code, 'validation_failed');
        assert.ok(
          res.body.details.some((d: { field: string }) => d.field === field),
          `${JSON.stringify(body)} → ${res.text}`,
        );
      }
      const t = await newTenant(server);
      for (const body of [{}, { disabled: 'yes' }, { disabled: true, name: 'x' }]) {
        const res = await server.admin.patch(`/v1/admin/tenants/${t.id}`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
      }
      assert.equal((await server.admin.get(`/v1/admin/tenants/${t.id}`)).body.disabled, false, 'unchanged');
    });

    it('unknown or malformed tenant ids → 404', async () => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '1']) {
        assert.equal((await server.admin.get(`/v1/admin/tenants/${id}`)).status, 404);
        assert.equal((await server.admin.patch(`/v1/admin/tenants/${id}`, { disabled: true })).status, 404);
        assert.equal((await server.admin.post(`/v1/admin/tenants/${id}/tokens/rotate`)).status, 404);
        assert.equal((await server.admin.get(`/v1/admin/tenants/${id}/tokens`)).status, 404);
      }
    });
  });

  describe('who am I (GET /v1/me)', () => {
    it("a tenant token: its tenant and the token's public id, never the token; the admin token: admin", async () => {
      const t = await newTenant(server, 'whoami');
      const me = await t.client.get('/v1/me');
      assert.equal(me.status, 200, me.text);
      const tokens = await server.admin.get(`/v1/admin/tenants/${t.id}/tokens`);
      const prefix = tokens.body.items.find((k: { id: string }) => k.id === t.tokenId).prefix;
      assert.deepEqual(me.body, {
        kind: 'tenant',
        tenant: { id: t.id, name: 'whoami' },
        scopes: ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'],
        actor: `token:${prefix}`,
        credential: { kind: 'token', id: t.tokenId, prefix },
        token: { id: t.tokenId, prefix },
      });
      assert.ok(!me.text.includes(t.token.slice(12)), 'not the secret part of the token');
      const admin = await server.admin.get('/v1/me');
      assert.equal(admin.status, 200, admin.text);
      assert.deepEqual(admin.body, {
        kind: 'admin',
        role: 'admin',
        actor: 'root',
        credential: { kind: 'admin_token', id: null },
      });
      assert.ok(!admin.text.includes(server.adminToken.slice(4)));
    });

    it("no token, a bad one, a revoked one or a disabled tenant's → 401", async () => {
      const t = await newTenant(server);
      assert.equal((await server.http.get('/v1/me')).status, 401);
      for (const token of [`adm_${'x'.repeat(48)}`, `atr_${'x'.repeat(64)}`, 'garbage']) {
        const res = await server.as(token).get('/v1/me');
        assert.equal(res.status, 401, token);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
      await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true });
      const disabled = await t.client.get('/v1/me');
      assert.equal(disabled.status, 401);
      assert.match(disabled.body.error, /disabled/);
      await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: false });
      assert.equal((await t.client.get('/v1/me')).status, 200);
      await server.admin.post(`/v1/admin/tenants/${t.id}/tokens/rotate`);
      assert.equal((await t.client.get('/v1/me')).status, 401, 'a rotated-out token');
    });
  });

  describe('audit log', () => {
    it('records each admin action without any token', async () => {
      const t = await newTenant(server, 'audited');
      const rot = await server.admin.post(`/v1/admin/tenants/${t.id}/tokens/rotate`);
      await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true });
      await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: false });
      const extra = await server.admin.post(`/v1/admin/tenants/${t.id}/tokens`);
      await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${extra.body.id}`);
      const res = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}`);
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.items.map((a: { action: string }) => a.action),
        ['token.revoke', 'token.create', 'tenant.enable', 'tenant.disable', 'token.rotate', 'tenant.create'],
      );
      for (const secret of [t.token, rot.body.token.token, extra.body.token, server.adminToken]) {
        assert.ok(!res.text.includes(secret), 'no secret in the audit log');
        assert.ok(!res.text.includes(secret.slice(12)), 'not even the secret part');
      }
      assert.ok(
        res.body.items.every(
          (a: { request_id: string }) => typeof a.request_id === 'string' && a.request_id.length > 0,
        ),
      );
      assert.ok(
        res.body.items.every((a: { actor: string; actor_id: string }) => a.actor === 'admin' && a.actor_id === 'root'),
        'every change names its actor: the root admin token',
      );
      const page = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}&limit=4`);
      assert.equal(page.body.items.length, 4);
      const rest = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}&cursor=${page.body.next_cursor}`);
      assert.deepEqual(
        rest.body.items.map((a: { action: string }) => a.action),
        ['token.rotate', 'tenant.create'],
      );
      assert.equal((await server.admin.get('/v1/admin/audit?cursor=garbage!')).status, 400);
    });
  });
});
