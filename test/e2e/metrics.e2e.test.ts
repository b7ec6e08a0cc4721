import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { inOneQuotaWindow } from '../helpers/quota-window.js';

const SCRAPE = 'scrape-token-0123456789abcdef';

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('Prometheus metrics at /metrics', () => {
  let server: TestServer;
  let fake: FakeProvider;
  let t: TestTenant;
  const scrape = async (): Promise<string> => {
    const res = await server.as(SCRAPE).get('/metrics');
    assert.equal(res.status, 200);
    return res.text;
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    server = await startTestServer({
      env: { ARBITER_METRICS_TOKEN: SCRAPE, OPENAI_BASE_URL: `${fake.url}/v1`, ARBITER_TENANT_SENDS_PER_MINUTE: '50' },
    });
    t = await newTenant(server, 'metered');
  });
  after(async () => {
    await server.close();
    await fake.stop();
  });

  it('answers the scrape token and the admin token only', async () => {
    assert.equal((await server.http.get('/metrics')).status, 401);
    assert.equal((await server.as('wrong-token-0123456789').get('/metrics')).status, 401);
    assert.equal((await t.client.get('/metrics')).status, 403, 'a tenant token is not enough: it is an operator route');
    const admin = await server.admin.get('/metrics');
    assert.equal(admin.status, 200);
    assert.match(admin.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await scrape(), /^# HELP arbiter_/m);
  });

  it('a scripted run moves the request, A2A, task, run, model, tool, batch and pool series', async () => {
    fake.scripts.set('metered', (c) => (c.call === 1 ? '/nosuchtool x' : 'the answer'));
    await newAgent(t, { id: 'meter', model: 'openai/metered' });
    const meter = a2a(server.url, t.token, 'meter');
    const sent = await meter.send('go');
    assert.equal(sent.result.task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(sent));
    assert.equal((await meter.get('nope')).error?.code, -32001);
    const rest = await t.client.get('/v1/a2a/agents/meter/tasks/nope', { 'a2a-version': '1.0' });
    assert.equal(rest.status, 404);

    const m = await scrape();
    const a2aRequests = (labels: Record<string, string>) => sample(m, 'arbiter_a2a_requests_total', labels);
    assert.equal(a2aRequests({ binding: 'jsonrpc', method: 'SendMessage', dialect: '1.0', error: '' }), 1);
    assert.equal(a2aRequests({ binding: 'jsonrpc', method: 'GetTask', dialect: '1.0', error: '-32001' }), 1);
    assert.equal(a2aRequests({ binding: 'rest', method: 'GetTask', dialect: '1.0', error: 'TASK_NOT_FOUND' }), 1);
    assert.ok(
      (sample(m, 'arbiter_http_requests_total', { method: 'POST', route: '/v1/a2a/agents/:id', status: '200' }) ?? 0) >=
        2,
    );
    assert.ok(
      (sample(m, 'arbiter_http_requests_total', { method: 'POST', route: '/v1/agents', status: '201' }) ?? 0) >= 1,
    );
    assert.equal(sample(m, 'arbiter_tasks_settled_total', { state: 'TASK_STATE_COMPLETED', agent: 'meter' }), 1);
    assert.equal(sample(m, 'arbiter_model_calls_total', { provider: 'openai', model: 'metered', outcome: 'ok' }), 2);
    assert.ok(
      (sample(m, 'arbiter_model_tokens_total', { provider: 'openai', model: 'metered', direction: 'input' }) ?? 0) > 0,
    );
    assert.equal(sample(m, 'arbiter_tool_calls_total', { tool: '/nosuchtool', outcome: 'error' }), 1);
    assert.ok((sample(m, 'arbiter_run_duration_seconds_count') ?? 0) >= 1);
    assert.ok((sample(m, 'arbiter_run_first_event_seconds_count') ?? 0) >= 1);
    assert.ok((sample(m, 'arbiter_write_batch_size_count') ?? 0) >= 2);
    assert.equal(sample(m, 'arbiter_runs_in_flight'), 0);
    assert.equal(sample(m, 'arbiter_db_pool_connections', { state: 'waiting' }), 0);
    assert.ok((sample(m, 'arbiter_db_pool_connections', { state: 'total' }) ?? 0) >= 1);
    assert.ok((sample(m, 'arbiter_process_cpu_seconds_total') ?? -1) >= 0, 'default process metrics');
    assert.doesNotMatch(m, new RegExp(sent.result.task.id), 'no task id in any label');
    assert.doesNotMatch(m, new RegExp(t.token), 'no token');
  });

  it('open streams and quota refusals', async () => {
    const ctl = new AbortController();
    const res = await fetch(`${server.url}/v1/agents/index/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hold' }),
      signal: ctl.signal,
    });
    assert.equal(res.status, 200);
    assert.equal(sample(await scrape(), 'arbiter_sse_streams_open'), 1);
    assert.equal(sample(await scrape(), 'arbiter_runs_in_flight'), 1);
    ctl.abort();
    const refusals = (m: string) => sample(m, 'arbiter_quota_refusals_total', { kind: 'sends' }) ?? 0;
    const tooMany = (m: string) =>
      sample(m, 'arbiter_http_requests_total', { method: 'POST', route: '/v1/agents/:id/chat', status: '429' }) ?? 0;
    // Two sends of a tenant allowed one a minute, in one quota window: the second is refused, and counted.
    await inOneQuotaWindow(async () => {
      const u = await newTenant(server, 'metered-quota');
      await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { sends_per_minute: 1 });
      const before = await scrape();
      for (let i = 0; i < 2; i++) await u.client.post('/v1/agents/index/chat', { message: 'x' });
      const m = await scrape();
      assert.equal(refusals(m) - refusals(before), 1);
      assert.equal(tooMany(m) - tooMany(before), 1);
    });
  });
});
