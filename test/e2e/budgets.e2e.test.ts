// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DataSource } from 'typeorm';
import {
  a2a,
  grpcClient,
  readSse,
  restClient,
  sendParams,
  textMessage,
  V03,
  V1,
  v1Client,
  waitFor,
} from '../helpers/a2a.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { metric } from '../helpers/metrics.js';
import { GRPC_ON, startTestServer, tempHome, type TestServer } from '../helpers/server.js';
import { decodeStatusDetails, STATUS_DETAILS_KEY } from '../../src/a2a-inbound/grpc/grpc-errors.js';
import { BudgetThresholds } from '../../src/budgets/budget-thresholds.service.js';

const PRICES = { currency: 'USD', prices: [{ model: 'openai/bud-*', input_per_million: 2, output_per_million: 8 }] };
/** Every call: 1000 tokens (600 input, 100 of them cached, and 400 output); (600 × 2 + 400 × 8) / 10⁶ = 0.0044 USD. */
const CALL = { input: 600, output: 400, cached: 100 };
const errorInfo = (details: any[]): any => details.find((d: any) => String(d['@type']).endsWith('ErrorInfo'));

describe('budgets: token and cost limits per tenant and agent', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let home: string;

  /** One native request to its end; true when it ran, else the refusal. */
  const orchestrate = async (t: TestTenant, agent: string, message = 'hello'): Promise<Response> =>
    fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, agent }),
    });
  const run = async (t: TestTenant, agent: string): Promise<void> => {
    const res = await orchestrate(t, agent);
    assert.equal(res.status, 200, await res.clone().text());
    const { events } = await readSse(res);
    assert.equal(events.at(-1)?.event, 'done');
  };
  const audit = async (tenantId: string, action: string): Promise<any[]> => {
    const res = await server.admin.get(`/v1/admin/audit?tenant_id=${tenantId}&limit=100`);
    assert.equal(res.status, 200, res.text);
    return (res.body.items as any[]).filter((r) => r.action === action);
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    home = tempHome();
    writeFileSync(join(home, 'prices.json'), JSON.stringify(PRICES));
    fake.scripts.set('bud-worker', () => ({ text: 'Done.', usage: CALL }));
    // Never done: every reply asks for a command, so the turn calls the model again (up to six calls).
    fake.scripts.set('bud-looper', () => ({ text: 'Step one, then more.\n/mem list\n', usage: CALL }));
    server = await startTestServer({
      home,
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-budgets-0001',
        ARBITER_PRICES_FILE: join(home, 'prices.json'),
        ...GRPC_ON,
      },
    });
  });
  after(async () => {
    await server.close();
    await fake.stop();
    rmSync(home, { recursive: true, force: true });
  });

  describe('setting budgets: clear 400s naming the field, never a 500', () => {
    it('tenant budgets through PATCH /v1/admin/tenants/:id/limits, shown by the tenant view, null clears', async () => {
      const t = await newTenant(server, 'budget-limits');
      const bad: [Record<string, unknown>, string][] = [
        [{ tokens_per_month: -1 }, 'tokens_per_month'],
        [{ tokens_per_day: 0 }, 'tokens_per_day'],
        [{ tokens_per_day: 1.5 }, 'tokens_per_day'],
        [{ tokens_per_month: 1e13 }, 'tokens_per_month'],
        [{ tokens_per_month: '1000' }, 'tokens_per_month'],
        [{ cost_per_month: -5 }, 'cost_per_month'],
        [{ cost_per_day: 0 }, 'cost_per_day'],
        [{ cost_per_month: 1e10 }, 'cost_per_month'],
        [{ cost_per_month: 'lots' }, 'cost_per_month'],
        [{ tokens_per_week: 5 }, 'tokens_per_week'],
      ];
      for (const [body, field] of bad) {
        const res = await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.ok(
          (res.body.details as { field: string }[]).some((d) => d.field === field),
          `${JSON.stringify(body)}: ${res.text}`,
        );
      }
      const ok = await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, {
        tokens_per_month: 1_000_000,
        cost_per_month: 50,
        sends_per_minute: 100,
      });
      assert.equal(ok.status, 200, ok.text);
      const view = await server.admin.get(`/v1/admin/tenants/${t.id}`);
      assert.deepEqual(view.body.limits, {
        sends_per_minute: 100,
        max_running_tasks: null,
        max_open_streams: null,
        tokens_per_day: null,
        tokens_per_month: 1_000_000,
        cost_per_day: null,
        cost_per_month: 50,
        requests_per_day: null,
        requests_per_month: null,
      });
      const cleared = await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, { cost_per_month: null });
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.limits.cost_per_month, null);
      assert.equal(cleared.body.limits.tokens_per_month, 1_000_000);
      const [row] = await audit(t.id, 'tenant.limits');
      assert.deepEqual(row.detail, { cost_per_month: null });
    });

    it('agent budgets: PUT/DELETE /v1/agents/:id/budget, within the tenant’s, for agents it has', async () => {
      const t = await newTenant(server, 'budget-agents');
      await newAgent(t, { id: 'worker', model: 'openai/bud-worker' });
      assert.equal(
        (await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, { tokens_per_day: 5000 })).status,
        200,
      );
      const bad: [unknown, string][] = [
        [{ tokens_per_day: 6000 }, 'tokens_per_day'], // above the tenant's
        [{ tokens_per_month: -3 }, 'tokens_per_month'],
        [{ cost_per_day: 'x' }, 'cost_per_day'],
        [{ cost_per_day: Number.MAX_VALUE }, 'cost_per_day'],
        [{ budget: 5 }, 'budget'],
        [[1, 2], 'body'],
      ];
      for (const [body, field] of bad) {
        const res = await t.client.put('/v1/agents/worker/budget', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.details[0].field, field, res.text);
      }
      assert.equal((await t.client.put('/v1/agents/nobody/budget', { tokens_per_day: 10 })).status, 404);
      const set = await t.client.put('/v1/agents/worker/budget', { tokens_per_day: 5000, cost_per_month: 1.5 });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(set.body.limits, {
        tokens_per_day: 5000,
        tokens_per_month: null,
        cost_per_day: null,
        cost_per_month: 1.5,
        requests_per_day: null,
        requests_per_month: null,
      });
      assert.equal(set.body.agent, 'worker');
      const [row] = await audit(t.id, 'agent.budget');
      assert.equal(row.actor, 'tenant');
      assert.equal(row.detail.agent_id, 'worker');
      assert.equal((await t.client.delete('/v1/agents/worker/budget')).status, 204);
      assert.equal((await t.client.delete('/v1/agents/worker/budget')).status, 404);
      assert.equal((await audit(t.id, 'agent.budget.delete')).length, 1);
    });
  });

  describe('enforced before a run starts, on every binding', () => {
    let t: TestTenant;
    before(async () => {
      t = await newTenant(server, 'budget-refused');
      await newAgent(t, { id: 'worker', model: 'openai/bud-worker' });
      await newAgent(t, { id: 'other', model: 'openai/bud-worker' });
      const set = await t.client.put('/v1/agents/worker/budget', { tokens_per_day: 1500 });
      assert.equal(set.status, 200, set.text);
      // 1000 tokens, then 1000 more (1000 < 1500 when it starts): 2000 spent, the budget is exhausted.
      await run(t, 'worker');
      await run(t, 'worker');
    });

    it('a budget below what was spent this period is refused, saying what was spent', async () => {
      const res = await t.client.put('/v1/agents/worker/budget', { tokens_per_day: 1000 });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.details[0].field, 'tokens_per_day');
      assert.match(res.body.details[0].messages[0], /already spent today \(2000\)/);
      const tenant = await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, { tokens_per_month: 1999 });
      assert.equal(tenant.status, 400, tenant.text);
      assert.equal(tenant.body.details[0].field, 'tokens_per_month');
      assert.match(tenant.body.details[0].messages[0], /already spent this month \(2000\)/);
    });

    it('native API: 429, code budget_exhausted, Retry-After the seconds to the reset', async () => {
      const res = await orchestrate(t, 'worker');
      assert.equal(res.status, 429);
      const body: any = await res.json();
      assert.equal(body.code, 'budget_exhausted');
      assert.equal(body.error, 'budget exhausted for agent worker (tokens today: 2000 of 1500)');
      assert.equal(body.budget, 'tokens_per_day');
      const resets = Date.parse(body.resets_at);
      assert.equal(new Date(resets).getUTCHours(), 0);
      const retry = Number(res.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 86_400, `Retry-After ${retry}`);
      // Another agent of the tenant has no budget of its own: it runs.
      await run(t, 'other');
    });

    it('JSON-RPC v1.0 and v0.3: -32000 with ErrorInfo BUDGET_EXHAUSTED and resets_at', async () => {
      const v1 = await a2a(server.url, t.token, 'worker').call('SendMessage', sendParams('hi'));
      assert.equal(v1.error?.code, -32000, JSON.stringify(v1));
      assert.equal(v1.error.message, 'budget exhausted for agent worker (tokens today: 2000 of 1500)');
      const info = errorInfo(v1.error.data as any[]);
      assert.equal(info.reason, 'BUDGET_EXHAUSTED');
      assert.equal(info.domain, 'a2a-protocol.org');
      assert.equal(info.metadata.budget, 'tokens_per_day');
      assert.equal(new Date(info.metadata.resets_at).getUTCHours(), 0);
      assert.ok(Number(info.metadata.retry_after_seconds) >= 1);
      const stream = await a2a(server.url, t.token, 'worker').call('SendStreamingMessage', sendParams('hi'));
      assert.equal(stream.error?.code, -32000);
      const v03 = await a2a(server.url, t.token, 'worker', V03).call('message/send', {
        message: { kind: 'message', messageId: 'm-v03-budget', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
      });
      assert.equal(v03.error?.code, -32000, JSON.stringify(v03));
      const data = v03.error.data as Record<string, string>;
      assert.equal(data.budget, 'tokens_per_day');
      assert.equal(data.resets_at, info.metadata.resets_at);
      // The official client is refused too.
      const client = await v1Client(server.url, t.token, 'worker');
      await assert.rejects(client.sendMessage(textMessage('hi')), /budget exhausted for agent worker/);
    });

    it('HTTP+JSON: 429 RESOURCE_EXHAUSTED with ErrorInfo BUDGET_EXHAUSTED and Retry-After', async () => {
      const res = await fetch(`${server.url}/v1/a2a/agents/worker/message:send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1 },
        body: JSON.stringify({ message: { messageId: 'm-rest-budget', role: 'ROLE_USER', parts: [{ text: 'x' }] } }),
      });
      assert.equal(res.status, 429);
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
      const body: any = await res.json();
      assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
      assert.equal(body.error.code, 429);
      const info = errorInfo(body.error.details);
      assert.equal(info.reason, 'BUDGET_EXHAUSTED');
      assert.equal(info.metadata.budget, 'tokens_per_day');
      assert.ok(info.metadata.resets_at);
      const client = await restClient(server.url, t.token, 'worker');
      await assert.rejects(client.sendMessage(textMessage('hi')), /budget exhausted for agent worker/);
    });

    it('gRPC: RESOURCE_EXHAUSTED with ErrorInfo BUDGET_EXHAUSTED in the status details', async () => {
      const client = await grpcClient(server.url, t.token, 'worker');
      const err: any = await client.sendMessage(textMessage('hi')).then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      assert.match(String(err?.message), /budget exhausted for agent worker/);
      const cause: any = err.cause ?? err;
      const code = cause.code ?? err.code;
      assert.equal(code, grpc.status.RESOURCE_EXHAUSTED, String(err));
      const md: grpc.Metadata | undefined = cause.metadata ?? err.metadata;
      const bin = md?.get(STATUS_DETAILS_KEY)[0];
      assert.ok(Buffer.isBuffer(bin), 'the status details trailer');
      const status = decodeStatusDetails(bin);
      const info = errorInfo(status.details);
      assert.equal(info.reason, 'BUDGET_EXHAUSTED');
      assert.equal(info.metadata.budget, 'tokens_per_day');
    });

    it('the soft threshold: one audit row and one counted crossing per budget and period', async () => {
      // 2000 of 1500 crossed 80% (once, after the second call); more accounted calls record nothing more.
      await server.running.app.get(BudgetThresholds).idle();
      const rows = await waitFor(async () => {
        const r = await audit(t.id, 'budget.threshold');
        return r.length ? r : undefined;
      });
      assert.equal(rows.length, 1);
      assert.deepEqual(
        { ...rows[0].detail, period_start: undefined },
        { agent_id: 'worker', budget: 'tokens_per_day', limit: 1500, used: 2000, percent: 80, period_start: undefined },
      );
      assert.equal(
        await metric(server.admin, 'arbiter_budget_threshold_crossings_total', {
          tenant: t.id,
          agent: 'worker',
          budget: 'tokens_per_day',
        }),
        1,
      );
      assert.ok(
        (await metric(server.admin, 'arbiter_budget_refusals_total', {
          budget: 'tokens_per_day',
          whose: 'agent',
          where: 'start',
        })) >= 1,
      );
    });

    it('GET /v1/budgets and /v1/admin/budgets: limits and use per tenant and agent', async () => {
      const res = await t.client.get('/v1/budgets');
      assert.equal(res.status, 200, res.text);
      const b = res.body;
      assert.deepEqual(Object.keys(b), ['currency', 'warn_at_percent', 'tenant', 'agents']);
      assert.equal(b.currency, 'USD');
      assert.equal(b.warn_at_percent, 80);
      assert.deepEqual(b.tenant.limits, {
        tokens_per_day: null,
        tokens_per_month: null,
        cost_per_day: null,
        cost_per_month: null,
        requests_per_day: null,
        requests_per_month: null,
      });
      assert.equal(b.tenant.used.day.tokens, 3000);
      assert.equal(b.tenant.used.month.tokens, 3000);
      assert.equal(b.tenant.used.month.cost, 0.0132);
      const now = new Date();
      assert.equal(
        b.tenant.used.month.from,
        new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      );
      assert.equal(
        b.tenant.used.month.resets_at,
        new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      );
      assert.deepEqual(
        b.agents.map((a: any) => [a.agent, a.limits.tokens_per_day, a.used.day.tokens, a.used.day.cost]),
        [
          ['other', null, 1000, 0.0044],
          ['worker', 1500, 2000, 0.0088],
        ],
      );
      const one = await server.admin.get(`/v1/admin/budgets?tenant=${t.id}`);
      assert.equal(one.status, 200, one.text);
      assert.equal(one.body.tenant_id, t.id);
      assert.deepEqual(one.body.agents, b.agents);
      const all = await server.admin.get('/v1/admin/budgets');
      assert.equal(all.status, 200, all.text);
      const mine = all.body.tenants.find((x: any) => x.tenant_id === t.id);
      assert.equal(mine.tenant_name, 'budget-refused');
      assert.deepEqual(mine.agents, b.agents);
      assert.equal(all.body.currency, 'USD');
      assert.equal((await server.admin.get('/v1/admin/budgets?tenant=nope')).status, 400);
    });
  });

  describe('enforced between the model calls of a running task', () => {
    it('the run ends failed with the budget in its status message, its response artifact closed', async () => {
      const t = await newTenant(server, 'budget-midrun');
      await newAgent(t, { id: 'looper', model: 'openai/bud-looper' });
      assert.equal((await t.client.put('/v1/agents/looper/budget', { tokens_per_month: 2500 })).status, 200);
      // Calls at 0, 1000 and 2000 spent start; before the fourth, 3000 of 2500 are spent.
      const reply = await a2a(server.url, t.token, 'looper').send('go');
      const task: any = reply.result?.task;
      assert.ok(task, JSON.stringify(reply));
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.equal(
        task.status.message.parts[0].text,
        'budget exhausted for agent looper (tokens this month: 3000 of 2500)',
      );
      const ds = server.running.app.get(DataSource);
      const [{ calls }] = await ds.query<{ calls: number }[]>(
        `SELECT count(*)::int AS calls FROM usage_ledger WHERE tenant_id = $1`,
        [t.id],
      );
      assert.equal(calls, 3);
      // Every artifact streamed in chunks ends with its last chunk.
      const events = await ds.query<{ payload: any }[]>(
        `SELECT payload FROM task_events WHERE task_id = $1 AND kind = 'artifact' ORDER BY seq`,
        [task.id],
      );
      const last = new Map<string, any>();
      for (const e of events) last.set(e.payload.artifact.artifactId, e.payload);
      assert.ok(last.size > 0);
      for (const [id, p] of last) assert.ok(!p.append || p.lastChunk, `artifact ${id} left open`);
      // And the next run of the agent is refused before it starts.
      const next = await a2a(server.url, t.token, 'looper').send('again');
      assert.equal(next.error?.code, -32000);
      assert.equal(next.error?.message, 'budget exhausted for agent looper (tokens this month: 3000 of 2500)');
    });
  });
});
