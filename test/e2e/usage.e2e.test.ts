// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { readSse } from '../helpers/a2a.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { metric } from '../helpers/metrics.js';
import { freshDatabase } from '../helpers/database.js';
import { startTestServer, tempHome, type TestServer } from '../helpers/server.js';

/** Prices per million tokens: an old price that later calls must not get, and the one in force. */
const PRICES = {
  currency: 'USD',
  prices: [
    { model: 'openai/priced-*', input_per_million: 100, output_per_million: 100, effective_from: '2000-01-01' },
    {
      model: 'openai/priced-*',
      input_per_million: 2,
      output_per_million: 8,
      cached_per_million: 0.5,
      effective_from: '2001-01-01',
    },
    { model: 'claude-usage', input_per_million: 3, output_per_million: 15 },
  ],
};
/** Each call of the priced model: 1000 input tokens (400 of them cached) and 200 output. */
const PRICED = { input: 1000, output: 200, cached: 400 };
/** (600 × 2 + 400 × 0.5 + 200 × 8) / 10⁶ */
const PRICED_COST = 0.003;

describe('usage accounting: ledger, rollups, prices and the usage reports', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let home: string;

  /** Runs one request to its end (the stream's `done`): every write of the run has committed by then. */
  const run = async (tenant: TestTenant, agent: string, message: string): Promise<void> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, agent }),
    });
    assert.equal(res.status, 200);
    const { events } = await readSse(res);
    const done = events[events.length - 1];
    assert.equal(done.event, 'done');
    assert.equal((done.data as { ok: boolean }).ok, true, JSON.stringify(done.data));
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    home = tempHome();
    writeFileSync(join(home, 'prices.json'), JSON.stringify(PRICES));
    // The default model (the index agent's) delegates once when asked to, and answers.
    fake.scripts.set('priced-a', (c) => {
      if (c.last.includes('[/agent helper')) return { text: 'Done, with help.', usage: PRICED };
      if (c.last.startsWith('delegate')) return { text: 'Asking.\n/agent helper do it\n', usage: PRICED };
      return { text: 'Helped.', usage: PRICED };
    });
    fake.scripts.set('claude-usage', () => ({ text: 'Cached.', usage: { input: 400, output: 50, cached: 100 } }));
    fake.scripts.set('free-model', () => ({ text: 'Free.', usage: { input: 5, output: 6 } }));
    fake.scripts.set('silent-model', () => ({ text: 'No usage.', usage: 'none' }));
    fake.scripts.set('liar-model', () => ({ text: 'Lies.', usage: { input: -5, output: 7.5, cached: -1 } }));
    server = await startTestServer({
      home,
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-usage-0001',
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_API_KEY: 'sk-ant-test-usage-0001',
        ARBITER_DEFAULT_MODEL: 'openai/priced-a',
        ARBITER_PRICES_FILE: join(home, 'prices.json'),
      },
    });
    a = await newTenant(server, 'usage-a');
    b = await newTenant(server, 'usage-b');
    await newAgent(a, { id: 'helper', model: 'openai/priced-a' });
    await newAgent(a, { id: 'claude', model: 'claude-usage' });
    await newAgent(a, { id: 'free', model: 'openai/free-model' });
    await newAgent(a, { id: 'silent', model: 'openai/silent-model' });
    await newAgent(a, { id: 'liar', model: 'openai/liar-model' });
    // Three calls in one task (index, helper, index), then one call per other agent.
    await run(a, 'index', 'delegate please');
    for (const agent of ['claude', 'free', 'silent', 'liar']) await run(a, agent, 'hello');
    await run(b, 'index', 'hello');
  });
  after(async () => {
    await server.close();
    await fake.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('writes a ledger row per model call, costed at the price in force, zero for bad or missing usage', async () => {
    const ds = server.running.app.get(DataSource);
    const rows = await ds.query<Record<string, string>[]>(
      `SELECT agent_id, provider, model, input_tokens, output_tokens, cached_tokens, cost, currency
         FROM usage_ledger WHERE tenant_id = $1 ORDER BY id`,
      [a.id],
    );
    const priced = ['0.003000000000', 'USD'];
    assert.deepEqual(
      rows.map((r) => [
        r.agent_id,
        r.provider,
        r.model,
        r.input_tokens,
        r.output_tokens,
        r.cached_tokens,
        r.cost,
        r.currency,
      ]),
      [
        ['index', 'openai', 'priced-a', '1000', '200', '400', ...priced],
        ['helper', 'openai', 'priced-a', '1000', '200', '400', ...priced],
        ['index', 'openai', 'priced-a', '1000', '200', '400', ...priced],
        ['claude', 'anthropic', 'claude-usage', '400', '50', '100', '0.001950000000', 'USD'],
        ['free', 'openai', 'free-model', '5', '6', '0', null, null],
        ['silent', 'openai', 'silent-model', '0', '0', '0', null, null],
        ['liar', 'openai', 'liar-model', '0', '0', '0', null, null],
      ],
    );
    const [{ tasks }] = await ds.query<{ tasks: number }[]>(
      `SELECT count(DISTINCT task_id)::int AS tasks FROM usage_ledger WHERE tenant_id = $1`,
      [a.id],
    );
    assert.equal(tasks, 5);
  });

  it('reports the tenant its own totals and rows per agent, in JSON', async () => {
    const res = await a.client.get('/v1/usage?group_by=agent');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.totals, {
      calls: 7,
      input_tokens: 3405,
      output_tokens: 656,
      cached_tokens: 1300,
      unpriced_calls: 3,
      cost: { amount: 0.01095, currency: 'USD' },
    });
    const byAgent = Object.fromEntries(res.body.rows.map((r: { agent: string }) => [r.agent, r]));
    assert.deepEqual(Object.keys(byAgent), ['claude', 'free', 'helper', 'index', 'liar', 'silent']);
    assert.deepEqual(byAgent.index, {
      agent: 'index',
      calls: 2,
      input_tokens: 2000,
      output_tokens: 400,
      cached_tokens: 800,
      unpriced_calls: 0,
      cost: { amount: 2 * PRICED_COST, currency: 'USD' },
    });
    assert.equal(byAgent.claude.cost.amount, 0.00195);
    assert.equal(byAgent.free.unpriced_calls, 1);
  });

  it('groups by model and provider, and by day and hour, to the token', async () => {
    const models = (await a.client.get('/v1/usage?group_by=provider,model')).body.rows;
    assert.deepEqual(
      models.map((r: Record<string, unknown>) => [r.provider, r.model, r.calls, r.input_tokens, r.output_tokens]),
      [
        ['anthropic', 'claude-usage', 1, 400, 50],
        ['openai', 'free-model', 1, 5, 6],
        ['openai', 'liar-model', 1, 0, 0],
        ['openai', 'priced-a', 3, 3000, 600],
        ['openai', 'silent-model', 1, 0, 0],
      ],
    );
    for (const g of ['day', 'hour', 'day,agent']) {
      const r = (await a.client.get(`/v1/usage?group_by=${g}`)).body;
      const sum = (k: string) => r.rows.reduce((n: number, row: Record<string, number>) => n + row[k], 0);
      assert.deepEqual(
        [sum('calls'), sum('input_tokens'), sum('output_tokens'), sum('cached_tokens')],
        [7, 3405, 656, 1300],
        g,
      );
      const key = g.split(',')[0];
      for (const row of r.rows) {
        assert.match(row[key], key === 'day' ? /^\d{4}-\d{2}-\d{2}$/ : /^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$/);
      }
    }
    // A period of whole days reads the daily rollup; an hour-aligned one the hourly: the same totals.
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10);
    const yesterday = new Date(Date.parse(today) - 86_400_000).toISOString().slice(0, 10);
    const daily = (await a.client.get(`/v1/usage?from=${yesterday}&to=${tomorrow}`)).body.totals;
    assert.equal(daily.input_tokens, 3405);
    // Nothing before the calls.
    const before = (await a.client.get(`/v1/usage?from=2020-01-01&to=2020-02-01&group_by=agent`)).body;
    assert.deepEqual([before.totals.calls, before.rows], [0, []]);
  });

  it('answers CSV with a header row', async () => {
    const res = await a.client.get('/v1/usage?group_by=agent&format=csv');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = res.text.trimEnd().split('\r\n');
    assert.equal(lines[0], 'agent,calls,input_tokens,output_tokens,cached_tokens,cost,currency,unpriced_calls');
    assert.ok(lines.includes('index,2,2000,400,800,0.006,USD,0'), res.text);
    assert.ok(lines.includes('free,1,5,6,0,0,USD,1'), res.text);
    assert.equal(lines.length, 7);
    const totals = (await a.client.get('/v1/usage?format=csv')).text.trimEnd().split('\r\n');
    assert.deepEqual(totals, [
      'calls,input_tokens,output_tokens,cached_tokens,cost,currency,unpriced_calls',
      '7,3405,656,1300,0.01095,USD,3',
    ]);
  });

  it("never shows another tenant's usage", async () => {
    const res = await b.client.get('/v1/usage?group_by=agent');
    assert.deepEqual(res.body.totals, {
      calls: 1,
      input_tokens: 1000,
      output_tokens: 200,
      cached_tokens: 400,
      unpriced_calls: 0,
      cost: { amount: PRICED_COST, currency: 'USD' },
    });
    assert.deepEqual(
      res.body.rows.map((r: { agent: string }) => r.agent),
      ['index'],
    );
  });

  it('shows operators every tenant, or one', async () => {
    const all = (await server.admin.get('/v1/admin/usage?group_by=tenant')).body;
    const mine = all.rows.filter((r: { tenant: string }) => r.tenant === a.id || r.tenant === b.id);
    assert.deepEqual(mine.map((r: Record<string, unknown>) => [r.tenant_name, r.calls, r.input_tokens]).sort(), [
      ['usage-a', 7, 3405],
      ['usage-b', 1, 1000],
    ]);
    const one = (await server.admin.get(`/v1/admin/usage?tenant=${b.id}&group_by=model`)).body;
    assert.deepEqual([one.totals.calls, one.rows.length, one.rows[0].model], [1, 1, 'priced-a']);
    const csv = (await server.admin.get(`/v1/admin/usage?tenant=${a.id}&group_by=tenant&format=csv`)).text;
    assert.equal(
      csv.split('\r\n')[0],
      'tenant,tenant_name,calls,input_tokens,output_tokens,cached_tokens,cost,currency,unpriced_calls',
    );
    assert.equal(csv.split('\r\n')[1], `${a.id},usage-a,7,3405,656,1300,0.01095,USD,3`);
  });

  it('counts tokens and cost in Prometheus, by tenant, agent and model', async () => {
    const labels = { tenant: a.id, agent: 'index', model: 'openai/priced-a' };
    assert.equal(await metric(server.admin, 'arbiter_usage_tokens_total', { ...labels, kind: 'input' }), 2000);
    assert.equal(await metric(server.admin, 'arbiter_usage_tokens_total', { ...labels, kind: 'cached' }), 800);
    const cost = await metric(server.admin, 'arbiter_usage_cost_total', { ...labels, currency: 'USD' });
    assert.ok(Math.abs(cost - 2 * PRICED_COST) < 1e-12, String(cost));
  });

  it('refuses bad queries with a 400 naming the field', async () => {
    const cases: [string, string][] = [
      ['group_by=agent,colour', 'group_by'],
      ['group_by=tenant', 'group_by'],
      ['from=2010-01-01&to=2025-01-01', 'from'],
      ['from=2025-02-01&to=2025-01-01', 'to'],
      ['from=yesterday', 'from'],
      ['format=xml', 'format'],
      ['tenant=x', 'tenant'],
    ];
    for (const [query, field] of cases) {
      const res = await a.client.get(`/v1/usage?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.code, 'validation_failed', query);
      assert.ok(
        res.body.details.some((d: { field: string }) => d.field === field),
        `${query}: ${JSON.stringify(res.body)}`,
      );
    }
    const admin = await server.admin.get('/v1/admin/usage?group_by=tenant,weekday');
    assert.equal(admin.status, 400);
    assert.equal(admin.body.details[0].field, 'group_by');
  });

  it('refuses to start with a bad prices file, naming the entry and field', async () => {
    const bad: [unknown, RegExp][] = [
      [
        { currency: 'USD', prices: [{ model: 'gpt-4o', input_per_million: -1, output_per_million: 1 }] },
        /prices\[0\]: input_per_million: must not be negative/,
      ],
      [
        { currency: 'USD', prices: [{ model: 'gpt-4o', input_per_million: 1, output_per_million: 1e9 }] },
        /prices\[0\]: output_per_million: must be at most/,
      ],
      [
        {
          currency: 'USD',
          prices: [
            {
              model: 'gpt-4o',
              input_per_million: 1,
              output_per_million: 1,
              effective_from: '2025-01-01',
              effective_until: '2025-06-01',
            },
            { model: 'gpt-4o', input_per_million: 2, output_per_million: 2, effective_from: '2025-03-01' },
          ],
        },
        /prices\[1\]: effective_from: the period of "gpt-4o" overlaps that of prices\[0\]/,
      ],
      [{ currency: 'dollars', prices: [] }, /currency: must be an ISO 4217 code/],
    ];
    for (const [file, message] of bad) {
      const home = tempHome();
      writeFileSync(join(home, 'prices.json'), JSON.stringify(file));
      const db = await freshDatabase();
      try {
        await assert.rejects(
          startTestServer({ home, db, env: { ARBITER_PRICES_FILE: join(home, 'prices.json') } }),
          message,
        );
      } finally {
        await db.drop();
        rmSync(home, { recursive: true, force: true });
      }
    }
  });
});
