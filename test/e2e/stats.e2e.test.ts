// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

interface Stats {
  window: string;
  interval_seconds: number;
  intervals: { start: string; started: number; completed: number; a2a_errors: unknown[] }[];
  totals: Record<string, any>;
  a2a_errors: { binding: string; code: string; count: number }[];
  usage: { by_agent: { key: string; input_tokens: number; output_tokens: number }[]; by_model: { key: string }[] };
  tenant_id: string | null;
}

const FAKE_ENV = (fake: FakeProvider) => ({
  OPENAI_BASE_URL: `${fake.url}/v1`,
  OPENAI_API_KEY: 'sk-test-stats-0001',
  ARBITER_DEFAULT_MODEL: 'openai/stats-model',
});

describe('the stats API: task outcomes, run times, A2A errors and usage over a window', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;

  /** Polls the tenant's stats until `ok` holds (the counts are written every few seconds and cached for 5 s). */
  const statsUntil = (t: TestTenant, ok: (s: Stats) => boolean, query = 'window=15m'): Promise<Stats> =>
    waitFor(async () => {
      const res = await t.client.get(`/v1/stats?${query}`);
      assert.equal(res.status, 200, res.text);
      return ok(res.body as Stats) ? (res.body as Stats) : undefined;
    });

  const orchestrate = async (t: TestTenant, agent: string, message: string): Promise<boolean> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, agent }),
    });
    assert.equal(res.status, 200);
    const { events } = await readSse(res);
    return (events[events.length - 1].data as { ok: boolean }).ok;
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    fake.scripts.set('stats-model', () => ({ text: 'Answered.', usage: { input: 100, output: 20 } }));
    fake.scripts.set('broken-model', () => ({ text: 'nope', status: 400 }));
    server = await startTestServer({ env: FAKE_ENV(fake) });
    a = await newTenant(server, 'stats-a');
    b = await newTenant(server, 'stats-b');
    await newAgent(a, { id: 'writer', model: 'openai/stats-model' });
    await newAgent(a, { id: 'broken', model: 'openai/broken-model' });
    await newAgent(a, { id: 'parrot', model: 'echo' });
    // Two completed runs (the scripted model, known tokens), one failed, one waiting for input then canceled.
    assert.equal(await orchestrate(a, 'writer', 'one'), true);
    assert.equal(await orchestrate(a, 'index', 'two'), true);
    assert.equal(await orchestrate(a, 'broken', 'three'), false);
    const parrot = a2a(server.url, a.token, 'parrot');
    const asked = await parrot.send('ask');
    assert.equal(asked.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked));
    const canceled = await parrot.cancel(asked.result.task.id);
    assert.equal(canceled.result.status.state, 'TASK_STATE_CANCELED', JSON.stringify(canceled));
    // A2A errors: a missing task twice on JSON-RPC, once on HTTP+JSON.
    for (let i = 0; i < 2; i++) assert.equal((await parrot.get('no-such-task')).error?.code, -32001);
    const rest = await fetch(`${server.url}/v1/a2a/agents/parrot/tasks/no-such-task`, {
      headers: { authorization: `Bearer ${a.token}`, 'a2a-version': '1.0' },
    });
    assert.equal(rest.status, 404);
    // Tenant b runs one task: none of it shows in a's figures.
    assert.equal(await orchestrate(b, 'index', 'other'), true);
  });
  after(async () => {
    await server.close();
    await fake.stop();
  });

  it('counts tasks by outcome per interval and over the window', async () => {
    const s = await statsUntil(a, (x) => x.totals.canceled === 1 && x.totals.started === 4);
    assert.equal(s.window, '15m');
    assert.equal(s.interval_seconds, 60);
    assert.equal(s.intervals.length, 15);
    assert.equal(s.tenant_id, a.id);
    const { started, completed, failed, canceled, input_required } = s.totals;
    assert.deepEqual(
      { started, completed, failed, canceled, input_required },
      {
        started: 4,
        completed: 2,
        failed: 1,
        canceled: 1,
        input_required: 1,
      },
    );
    assert.equal(
      s.intervals.reduce((n, i) => n + i.started, 0),
      4,
      'the intervals add up to the totals',
    );
  });

  it('reports time to first event and run duration percentiles', async () => {
    const s = await statsUntil(a, (x) => x.totals.duration.p50 !== null);
    for (const key of ['first_event', 'duration'] as const) {
      const { p50, p95 } = s.totals[key];
      assert.ok(typeof p50 === 'number' && p50 >= 0, `${key} p50 ${p50}`);
      assert.ok(typeof p95 === 'number' && p95 >= p50, `${key} p95 ${p95}`);
    }
  });

  it('counts A2A errors by binding and code', async () => {
    const s = await statsUntil(a, (x) => x.totals.a2a_errors >= 3);
    const of = (binding: string) => s.a2a_errors.filter((e) => e.binding === binding);
    assert.deepEqual(of('jsonrpc'), [{ binding: 'jsonrpc', code: '-32001', count: 2 }]);
    assert.deepEqual(of('rest'), [{ binding: 'rest', code: 'TASK_NOT_FOUND', count: 1 }]);
    assert.equal(s.intervals.flatMap((i) => i.a2a_errors).length >= 2, true);
  });

  it('reports tokens by agent and by model from the usage rollups', async () => {
    const s = await statsUntil(a, () => true, 'window=1h');
    const byAgent = Object.fromEntries(s.usage.by_agent.map((r) => [r.key, [r.input_tokens, r.output_tokens]]));
    assert.deepEqual(byAgent, { index: [100, 20], writer: [100, 20] });
    assert.deepEqual(
      s.usage.by_model.map((r) => r.key),
      ['stats-model'],
    );
  });

  it('keeps tenants apart, and lets operators read every tenant or one', async () => {
    const sb = await statsUntil(b, (x) => x.totals.completed === 1);
    assert.equal(sb.totals.started, 1);
    assert.equal(sb.totals.a2a_errors, 0);
    const all = await waitFor(async () => {
      const res = await server.admin.get('/v1/admin/stats?window=15m');
      assert.equal(res.status, 200, res.text);
      return res.body.totals.started === 5 ? (res.body as Stats) : undefined;
    });
    assert.equal(all.tenant_id, null);
    const one = await server.admin.get(`/v1/admin/stats?window=1h&tenant=${b.id}`);
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.totals.started, 1);
    assert.equal(one.body.tenant_id, b.id);
  });

  it('answers every window', async () => {
    for (const w of ['15m', '1h', '6h', '24h', '7d', '30d']) {
      const s = await statsUntil(a, () => true, `window=${w}`);
      assert.ok(s.intervals.length <= 120, w);
      assert.equal(s.totals.started, 4, w);
    }
  });

  it('reports budget use per agent beside its limits, and the tenant’s', async () => {
    const limits = await server.admin.patch(`/v1/admin/tenants/${a.id}/limits`, { tokens_per_month: 100_000 });
    assert.equal(limits.status, 200, limits.text);
    const put = await a.client.put('/v1/agents/writer/budget', { tokens_per_day: 5000 });
    assert.equal(put.status, 200, put.text);
    // The answer is kept a few seconds: wait until it shows the new limits.
    const s = await statsUntil(a, (x: any) => x.budgets?.tenant?.limits?.tokens_per_month === 100_000);
    const budgets = (s as any).budgets;
    assert.equal(budgets.currency, null);
    assert.equal(budgets.warn_at_percent, 80);
    assert.deepEqual(budgets.tenant.limits, {
      tokens_per_day: null,
      tokens_per_month: 100_000,
      cost_per_day: null,
      cost_per_month: null,
      requests_per_day: null,
      requests_per_month: null,
    });
    assert.equal(budgets.tenant.used.month.tokens, 240, 'writer and index: 120 tokens each');
    const writer = budgets.agents.find((x: any) => x.agent === 'writer');
    assert.equal(writer.limits.tokens_per_day, 5000);
    assert.equal(writer.used.day.tokens, 120);
    assert.match(writer.used.day.resets_at, /T00:00:00\.000Z$/);
    assert.deepEqual(
      budgets.agents.map((x: any) => x.agent),
      ['index', 'writer'],
      'every agent with a budget or usage this month',
    );
    // The same as GET /v1/budgets answers.
    assert.deepEqual(budgets, (await a.client.get('/v1/budgets')).body);
    // Operators: one tenant's, or every tenant with a budget (by name).
    const one = await waitFor(async () => {
      const res = await server.admin.get(`/v1/admin/stats?window=15m&tenant=${a.id}`);
      assert.equal(res.status, 200, res.text);
      return res.body.budgets?.tenant?.limits?.tokens_per_month === 100_000 ? res.body : undefined;
    });
    assert.equal(one.budgets.agents.find((x: any) => x.agent === 'writer').used.day.tokens, 120);
    const all = await waitFor(async () => {
      const res = await server.admin.get('/v1/admin/stats?window=15m');
      assert.equal(res.status, 200, res.text);
      return res.body.budgets?.tenants?.length ? res.body : undefined;
    });
    assert.deepEqual(
      all.budgets.tenants.map((t: any) => [t.tenant_id, t.tenant_name]),
      [[a.id, 'stats-a']],
      'tenant b has no budget',
    );
    assert.equal(all.budgets.tenants[0].tenant.used.month.tokens, 240);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const cases: [string, string, any][] = [
      ['/v1/stats?window=2h', 'window', a.client],
      ['/v1/stats?window=', 'window', a.client],
      [`/v1/stats?tenant=${b.id}`, 'tenant', a.client],
      ['/v1/stats?window=15m&window=1h', 'window', a.client],
      ['/v1/admin/stats?tenant=nope', 'tenant', server.admin],
      ['/v1/admin/stats?window=%00', 'window', server.admin],
    ];
    for (const [path, field, client] of cases) {
      const res = await client.get(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.ok(
        (res.body.details as { field: string }[]).some((d) => d.field === field),
        `${path}: ${JSON.stringify(res.body)}`,
      );
    }
    assert.equal((await server.http.get('/v1/stats')).status, 401);
    assert.equal((await a.client.get('/v1/admin/stats')).status, 403);
  });
});

describe('the stats API over two replicas', { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' }, () => {
  let fake: FakeProvider;
  let db: TestDatabase;
  let one: TestServer;
  let two: TestServer;

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    fake.scripts.set('stats-model', () => ({ text: 'Answered.', usage: { input: 100, output: 20 } }));
    db = await freshDatabase();
    one = await startTestServer({ db, env: FAKE_ENV(fake) });
    two = await startTestServer({ db, env: { ...FAKE_ENV(fake), ARBITER_ADMIN_TOKEN: one.adminToken } });
  });
  after(async () => {
    await two?.close();
    await one?.close();
    await db?.drop();
    await fake.stop();
  });

  it('counts the runs of every replica, whichever replica answers', async () => {
    const t = await newTenant(one, 'stats-replicas');
    const onTwo = two.as(t.token);
    for (const [server, n] of [
      [one, 2],
      [two, 3],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const reply = await a2a(server.url, t.token, 'index').send(`hello ${i}`);
        assert.equal(reply.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(reply));
      }
    }
    for (const client of [t.client, onTwo]) {
      await waitFor(async () => {
        const res = await client.get('/v1/stats?window=15m');
        assert.equal(res.status, 200, res.text);
        return res.body.totals.started === 5 && res.body.totals.completed === 5 ? true : undefined;
      });
    }
  });
});
