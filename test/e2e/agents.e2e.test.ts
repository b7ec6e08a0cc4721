import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('agent registry (/v1/agents)', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  before(async () => {
    server = await startTestServer();
    a = await newTenant(server, 'alpha');
    b = await newTenant(server, 'beta');
  });
  after(async () => {
    await server.close();
  });

  describe('create', () => {
    it('accepts a flat constitution and fills every default', async () => {
      const res = await a.client.post('/v1/agents', { id: 'research', role: 'analyst', goal: 'find facts' });
      assert.equal(res.status, 201);
      assert.equal(res.body.id, 'research');
      assert.equal(res.body.source, 'stored');
      assert.deepEqual(res.body.agent_def, {
        name: 'research',
        role: 'analyst',
        personality: '',
        goal: 'find facts',
        model: null,
        max_tokens: 4096,
        temperature: 0.7,
        brevity: 'lite',
        mode: 'standard',
        rules: [],
        capabilities: [],
      });
      assert.ok(res.body.created_at);
    });

    it('accepts the {agent_def} form', async () => {
      const res = await a.client.post('/v1/agents', {
        id: 'writer',
        agent_def: {
          name: 'The Writer',
          model: 'anthropic/claude-sonnet-4-5',
          temperature: 0,
          max_tokens: 200000,
          brevity: 'ultra',
          mode: 'writer',
          rules: ['cite sources', 'no emoji'],
          capabilities: ['/write', '/mem', 'copy editing', 'copy editing'],
        },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.agent_def.name, 'The Writer');
      assert.equal(res.body.agent_def.temperature, 0);
      assert.deepEqual(res.body.agent_def.capabilities, ['/write', '/mem', 'copy editing']);
    });

    it('409 on a duplicate id; index is reserved', async () => {
      await newAgent(a, { id: 'dup' });
      const again = await a.client.post('/v1/agents', { id: 'dup', role: 'changed' });
      assert.equal(again.status, 409);
      assert.equal((await a.client.get('/v1/agents/dup')).body.agent_def.role, '', 'unchanged');
      const idx = await a.client.post('/v1/agents', { id: 'index' });
      assert.equal(idx.status, 409);
      assert.match(idx.body.error, /reserved/);
      // The same id in another tenant is a different agent.
      assert.equal((await b.client.post('/v1/agents', { id: 'dup' })).status, 201);
    });

    it('names each failing field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ role: 'x' }, 'id'],
        [{ id: 42 }, 'id'],
        [{ id: '' }, 'id'],
        [{ id: 'has space' }, 'id'],
        [{ id: 'a'.repeat(65) }, 'id'],
        [{ id: 'ok', name: '' }, 'name'],
        [{ id: 'ok', name: 'x'.repeat(129) }, 'name'],
        [{ id: 'ok', name: 7 }, 'name'],
        [{ id: 'ok', role: 'x'.repeat(257) }, 'role'],
        [{ id: 'ok', role: ['a'] }, 'role'],
        [{ id: 'ok', personality: 'x'.repeat(2001) }, 'personality'],
        [{ id: 'ok', goal: 'x'.repeat(4001) }, 'goal'],
        [{ id: 'ok', goal: 'bell\u0007' }, 'goal'],
        [{ id: 'ok', model: '' }, 'model'],
        [{ id: 'ok', model: 'has space' }, 'model'],
        [{ id: 'ok', model: 5 }, 'model'],
        [{ id: 'ok', max_tokens: 0 }, 'max_tokens'],
        [{ id: 'ok', max_tokens: 200001 }, 'max_tokens'],
        [{ id: 'ok', max_tokens: 1.5 }, 'max_tokens'],
        [{ id: 'ok', max_tokens: '100' }, 'max_tokens'],
        [{ id: 'ok', temperature: -0.1 }, 'temperature'],
        [{ id: 'ok', temperature: 2.01 }, 'temperature'],
        [{ id: 'ok', temperature: '1' }, 'temperature'],
        [{ id: 'ok', brevity: 'terse' }, 'brevity'],
        [{ id: 'ok', mode: 'chaos' }, 'mode'],
        [{ id: 'ok', rules: 'be nice' }, 'rules'],
        [{ id: 'ok', rules: [1] }, 'rules'],
        [{ id: 'ok', rules: [''] }, 'rules'],
        [{ id: 'ok', rules: Array(65).fill('r') }, 'rules'],
        [{ id: 'ok', capabilities: '/fetch' }, 'capabilities'],
        [{ id: 'ok', capabilities: [{}] }, 'capabilities'],
        [{ id: 'ok', capabilities: Array.from({ length: 65 }, (_, i) => `skill ${i}`) }, 'capabilities'],
        [{ id: 'ok', unknown_field: 1 }, 'unknown_field'],
        [{ id: 'ok', agent_def: { temperature: 9 } }, 'agent_def.temperature'],
        [{ id: 'ok', agent_def: { nope: 1 } }, 'agent_def.nope'],
        [{ id: 'ok', agent_def: 'text' }, 'agent_def'],
        [{ id: 'ok', agent_def: {}, role: 'beside' }, 'role'],
      ];
      for (const [body, field] of cases) {
        const res = await a.client.post('/v1/agents', body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${res.status}`);
        assert.equal(res.body.code, 'validation_failed');
        const fields = res.body.details.map((d: { field: string }) => d.field);
        assert.ok(fields.includes(field), `${JSON.stringify(body).slice(0, 80)}: expected ${field}, got ${fields}`);
      }
      assert.equal((await a.client.get('/v1/agents/ok')).status, 404, 'nothing was created');
    });

    it('an unknown tool → 400 listing the known ones; descriptive skills are fine', async () => {
      const res = await a.client.post('/v1/agents', {
        id: 'tooly',
        capabilities: ['/fetch', '/browse', 'web research'],
      });
      assert.equal(res.status, 400);
      const msg = res.body.details.find((d: { field: string }) => d.field === 'capabilities').messages.join(' ');
      assert.match(msg, /"\/browse"/);
      for (const tool of [
        '/agent',
        '/parallel',
        '/write',
        '/mem',
        '/fetch',
        '/a2a',
        '/mcp',
        '/search',
        '/mcp:<server>',
      ])
        assert.ok(msg.includes(tool), tool);
      const ok = await a.client.post('/v1/agents', { id: 'tooly', capabilities: ['/fetch', 'web research'] });
      assert.equal(ok.status, 201);
    });

    it('one message per field, the one that applies: a wrong type says only that, then range or format', async () => {
      const res = await a.client.post('/v1/agents', {
        id: 'typed',
        temperature: 'hot',
        max_tokens: 0,
        agent_def: undefined,
        rules: 'be nice',
      });
      assert.equal(res.status, 400);
      assert.deepEqual(
        Object.fromEntries(res.body.details.map((d: { field: string; messages: string[] }) => [d.field, d.messages])),
        {
          temperature: ['temperature must be a number'],
          max_tokens: ['max_tokens must not be less than 1'],
          rules: ['rules must be an array'],
        },
      );
      const nested = await a.client.post('/v1/agents', { id: 'typed', agent_def: { temperature: 'hot' } });
      assert.deepEqual(nested.body.details, [
        { field: 'agent_def.temperature', messages: ['temperature must be a number'] },
      ]);
    });

    it('reports several bad fields at once', async () => {
      const res = await a.client.post('/v1/agents', { id: 'bad id', temperature: 3, mode: 'x' });
      const fields = res.body.details.map((d: { field: string }) => d.field).sort();
      assert.deepEqual(fields, ['id', 'mode', 'temperature']);
    });
  });

  describe('read', () => {
    it('lists index first, then agents in id order, paginated with nothing hidden', async () => {
      const t = await newTenant(server, 'lister');
      const ids = Array.from({ length: 7 }, (_, i) => `agent-${String.fromCharCode(103 - i)}`); // agent-g … agent-a
      for (const id of ids) await newAgent(t, { id });
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = cursor ? `&cursor=${cursor}` : '';
        const res = await t.client.get(`/v1/agents?limit=3${q}`);
        assert.equal(res.status, 200);
        assert.ok(res.body.items.length <= 3);
        seen.push(...res.body.items.map((x: { id: string }) => x.id));
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor);
      assert.deepEqual(seen, ['index', ...[...ids].sort()]);
      assert.equal(pages, 3);
      const one = await t.client.get('/v1/agents?limit=1');
      assert.deepEqual(
        one.body.items.map((x: { id: string }) => x.id),
        ['index'],
      );
      const two = await t.client.get(`/v1/agents?limit=1&cursor=${one.body.next_cursor}`);
      assert.deepEqual(
        two.body.items.map((x: { id: string }) => x.id),
        ['agent-a'],
      );
      const all = await t.client.get('/v1/agents');
      assert.equal(all.body.items.length, 8);
      assert.equal(all.body.next_cursor, null);
    });

    it('the built-in index is served and cannot be changed or deleted', async () => {
      const res = await a.client.get('/v1/agents/index');
      assert.equal(res.status, 200);
      assert.equal(res.body.source, 'builtin');
      assert.equal((await a.client.patch('/v1/agents/index', { role: 'x' })).status, 409);
      assert.equal((await a.client.delete('/v1/agents/index')).status, 409);
      assert.equal((await a.client.get('/v1/agents/index')).body.agent_def.role, 'master orchestrator');
    });

    it('bad list parameters → 400 naming them', async () => {
      for (const q of ['limit=0', 'limit=201', 'limit=abc', 'cursor=!!', 'cursor=eyJ4IjoxfQ', 'bogus=1']) {
        const res = await a.client.get(`/v1/agents?${q}`);
        assert.equal(res.status, 400, q);
      }
    });

    it('a bad id in the path → 400 naming id; unknown → 404', async () => {
      const bad = await a.client.get(`/v1/agents/${'x'.repeat(65)}`);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.details[0].field, 'id');
      assert.equal((await a.client.get('/v1/agents/nobody')).status, 404);
    });
  });

  describe('update and delete', () => {
    it('PATCH changes only the fields given; null resets one to its default', async () => {
      await newAgent(a, { id: 'patchy', role: 'r1', goal: 'g1', temperature: 1.5, rules: ['x'] });
      const res = await a.client.patch('/v1/agents/patchy', { goal: 'g2', temperature: null });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.agent_def.role, 'r1');
      assert.equal(res.body.agent_def.goal, 'g2');
      assert.equal(res.body.agent_def.temperature, 0.7);
      assert.deepEqual(res.body.agent_def.rules, ['x']);
      const wrapped = await a.client.patch('/v1/agents/patchy', { agent_def: { rules: [] } });
      assert.deepEqual(wrapped.body.agent_def.rules, []);
      assert.ok(Date.parse(wrapped.body.updated_at) >= Date.parse(res.body.updated_at));
    });

    it('a bad PATCH changes nothing', async () => {
      await newAgent(a, { id: 'steady', role: 'keep' });
      for (const body of [{ role: 'new', temperature: 5 }, { id: 'other' }, { capabilities: ['/nope'] }, { foo: 1 }]) {
        const res = await a.client.patch('/v1/agents/steady', body);
        assert.equal(res.status, 400, JSON.stringify(body));
      }
      const bad = await a.client.request('PATCH', '/v1/agents/steady', {
        raw: '{"role":',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(bad.status, 400);
      assert.equal((await a.client.get('/v1/agents/steady')).body.agent_def.role, 'keep');
    });

    it('concurrent PATCHes of different fields both land', async () => {
      await newAgent(a, { id: 'racy' });
      const jobs = [];
      for (let i = 0; i < 5; i++) {
        jobs.push(a.client.patch('/v1/agents/racy', { role: `role-${i}` }));
        jobs.push(a.client.patch('/v1/agents/racy', { rules: [`rule-${i}`] }));
      }
      const results = await Promise.all(jobs);
      assert.ok(results.every((r) => r.status === 200));
      const final = (await a.client.get('/v1/agents/racy')).body.agent_def;
      assert.match(final.role, /^role-\d$/);
      assert.match(final.rules[0], /^rule-\d$/);
    });

    it('DELETE → 204, then 404', async () => {
      await newAgent(a, { id: 'gone' });
      assert.equal((await a.client.delete('/v1/agents/gone')).status, 204);
      assert.equal((await a.client.get('/v1/agents/gone')).status, 404);
      assert.equal((await a.client.delete('/v1/agents/gone')).status, 404);
    });
  });

  describe('audit', () => {
    it('create, update and delete are audited with the acting token; refused changes are not', async () => {
      const t = await newTenant(server, 'audited');
      const prefix = (await server.admin.get(`/v1/admin/tenants/${t.id}/tokens`)).body.items[0].prefix;
      assert.match(prefix, /^atr_/);
      assert.equal((await t.client.post('/v1/agents', { id: 'aud', role: 'r' })).status, 201);
      assert.equal((await t.client.post('/v1/agents', { id: 'aud', role: 'r' })).status, 409);
      assert.equal((await t.client.post('/v1/agents', { id: 'bad', temperature: 9 })).status, 400);
      assert.equal((await t.client.patch('/v1/agents/aud', { goal: 'g', rules: ['x'] })).status, 200);
      assert.equal((await t.client.patch('/v1/agents/aud', { temperature: 9 })).status, 400);
      assert.equal((await t.client.delete('/v1/agents/aud')).status, 204);
      assert.equal((await t.client.delete('/v1/agents/aud')).status, 404);
      const log = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}`);
      assert.equal(log.status, 200);
      const rows = log.body.items.filter((r: { action: string }) => r.action.startsWith('agent.'));
      assert.deepEqual(
        rows.map((r: any) => [r.actor, r.action, r.detail.agent_id, r.detail.token_id, r.detail.token_prefix]),
        [
          ['tenant', 'agent.delete', 'aud', t.tokenId, prefix],
          ['tenant', 'agent.update', 'aud', t.tokenId, prefix],
          ['tenant', 'agent.create', 'aud', t.tokenId, prefix],
        ],
      );
      assert.deepEqual(rows[1].detail.fields, ['goal', 'rules']);
      for (const r of rows) assert.match(r.request_id, /\S/);
      assert.ok(!JSON.stringify(log.body).includes(t.token), 'never the token itself');
    });
  });

  describe('tenant isolation', () => {
    it("another tenant's agent answers exactly like a missing one on every route", async () => {
      await newAgent(a, { id: 'private', role: 'secret role' });
      const missing = {
        get: await b.client.get('/v1/agents/no-such-agent'),
        patch: await b.client.patch('/v1/agents/no-such-agent', { role: 'x' }),
        del: await b.client.delete('/v1/agents/no-such-agent'),
      };
      const foreign = {
        get: await b.client.get('/v1/agents/private'),
        patch: await b.client.patch('/v1/agents/private', { role: 'x' }),
        del: await b.client.delete('/v1/agents/private'),
      };
      for (const k of ['get', 'patch', 'del'] as const) {
        assert.equal(foreign[k].status, 404, k);
        assert.equal(foreign[k].status, missing[k].status, k);
        const strip = (body: { error: string; code: string }) => ({
          code: body.code,
          error: body.error.replace('no-such-agent', 'ID').replace('private', 'ID'),
        });
        assert.deepEqual(strip(foreign[k].body), strip(missing[k].body), k);
      }
      const list = await b.client.get('/v1/agents');
      assert.ok(!list.text.includes('secret role'));
      assert.ok(!list.body.items.some((x: { id: string }) => x.id === 'private'));
      // B may create its own 'private' without touching A's.
      assert.equal((await b.client.post('/v1/agents', { id: 'private', role: 'b role' })).status, 201);
      assert.equal((await a.client.get('/v1/agents/private')).body.agent_def.role, 'secret role');
      assert.equal((await b.client.delete('/v1/agents/private')).status, 204);
      assert.equal((await a.client.get('/v1/agents/private')).status, 200);
    });
  });
});
