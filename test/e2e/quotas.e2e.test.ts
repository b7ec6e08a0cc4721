import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { a2a, sendParams, V1, waitFor, type RpcReply } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { inOneQuotaWindow } from '../helpers/quota-window.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';
import { PgThrottlerStorage } from '../../src/quotas/pg-throttler.storage.js';
import { UsageService } from '../../src/quotas/usage.service.js';

/** A send that returns at once: a held task keeps running. */
const HELD = { returnImmediately: true };
const on = (s: TestServer, t: TestTenant) => a2a(s.url, t.token);
const errorInfo = (body: any) => body.error?.data?.find((d: any) => d['@type']?.endsWith('ErrorInfo'));

describe('quotas: sends per minute, running tasks, open streams (per tenant, configurable)', () => {
  let server: TestServer;
  let other: TestTenant;
  before(async () => {
    server = await startTestServer({
      env: { ARBITER_TENANT_SENDS_PER_MINUTE: '3', ARBITER_QUOTA_SYNC_MS: '100', ARBITER_ECHO_DELAY_MS: '0' },
    });
    other = await newTenant(server, 'other');
  });
  after(async () => {
    await server.close();
  });

  it('the send quota refuses on every surface (429 + Retry-After; JSON-RPC retryable); reads, cancels and health go on', async () => {
    await inOneQuotaWindow(async () => {
      const t = await newTenant(server, 'limited');
      await sendQuotaRefusesEverywhere(t);
    });
  });

  /** `t` (a fresh tenant, default quota of 3) fills its budget; the next send is refused on every surface. */
  const sendQuotaRefusesEverywhere = async (t: TestTenant): Promise<void> => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await on(server, t).post('SendMessage', sendParams('hi', HELD));
      const body: any = await res.json();
      assert.equal(res.status, 200);
      assert.ok(body.result?.task?.id, JSON.stringify(body));
      ids.push(body.result.task.id);
    }
    const refused = await on(server, t).post('SendMessage', sendParams('hi', HELD));
    const body: any = await refused.json();
    assert.equal(body.error.code, -32000);
    assert.match(body.error.message, /send quota reached: 3 messages per minute/);
    assert.equal(errorInfo(body).reason, 'RESOURCE_EXHAUSTED');
    assert.equal(errorInfo(body).metadata.retryable, 'true');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);

    const rest = await fetch(`${server.url}/v1/a2a/agents/index/message:send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1 },
      body: JSON.stringify({ message: { messageId: 'm-rest', role: 'ROLE_USER', parts: [{ text: 'x' }] } }),
    });
    assert.equal(rest.status, 429);
    assert.ok(Number(rest.headers.get('retry-after')) >= 1);
    const restBody: any = await rest.json();
    assert.equal(restBody.error.status, 'RESOURCE_EXHAUSTED');

    const chat = await t.client.post('/v1/agents/index/chat', { message: 'x' });
    assert.equal(chat.status, 429);
    assert.equal(chat.body.code, 'rate_limited');
    assert.ok(Number(chat.headers.get('retry-after')) >= 1);

    // Never throttled by the send quota: reads, lists, cancels, subscriptions, health.
    assert.ok((await on(server, t).get(ids[0])).result?.id);
    assert.equal((await t.client.get(`/v1/a2a/agents/index/tasks?pageSize=5`, V1)).status, 200);
    assert.equal((await t.client.get(`/v1/requests/${ids[0]}`)).status, 200);
    assert.equal((await server.http.get('/v1/health')).status, 200);
    // Another tenant has its own budget.
    assert.ok((await on(server, other).send('hi', HELD)).result?.task?.id);
  };

  it('the admin API sets per-tenant limits (null = default, 0 = unlimited), audited, in force at once', async () => {
    const u = await newTenant(server, 'tuned');
    const bad = await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { sends_per_minute: -1, nope: 1 });
    assert.equal(bad.status, 400);
    const fields = bad.body.details.map((d: { field: string }) => d.field).sort();
    assert.deepEqual(fields, ['nope', 'sends_per_minute']);
    const set = await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { sends_per_minute: 0 });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.limits, {
      sends_per_minute: 0,
      max_running_tasks: null,
      max_open_streams: null,
      tokens_per_day: null,
      tokens_per_month: null,
      cost_per_day: null,
      cost_per_month: null,
      requests_per_day: null,
      requests_per_month: null,
    });
    for (let i = 0; i < 5; i++) assert.ok((await on(server, u).send('hi', HELD)).result, 'unlimited');
    await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { sends_per_minute: null });
    assert.equal((await server.admin.get(`/v1/admin/tenants/${u.id}`)).body.limits.sends_per_minute, null);
    const audit = await server.admin.get(`/v1/admin/audit?tenant_id=${u.id}`);
    assert.deepEqual(
      audit.body.items.filter((r: any) => r.action === 'tenant.limits').map((r: any) => r.detail),
      [{ sends_per_minute: null }, { sends_per_minute: 0 }],
    );
    assert.equal((await server.admin.patch(`/v1/admin/tenants/${crypto.randomUUID()}/limits`, {})).status, 404);
  });

  it('the running-task cap refuses new tasks (not continuations or reads) until one ends', async () => {
    const u = await newTenant(server, 'runner');
    await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { max_running_tasks: 2, sends_per_minute: 0 });
    // Sent at once: the cap holds even while the creations are in flight.
    const results = await Promise.all([1, 2, 3, 4].map(() => on(server, u).send('hold', HELD)));
    const held = results.filter((r) => r.result).map((r) => r.result.task.id as string);
    const refused = results.filter((r) => r.error);
    assert.equal(held.length, 2, JSON.stringify(results));
    assert.equal(refused.length, 2);
    assert.match(refused[0].error!.message, /running-task cap reached: this tenant may run 2 tasks at once/);
    assert.equal((await on(server, u).cancel(held[0])).result?.status?.state, 'TASK_STATE_CANCELED');
    await waitFor(async () => ((await on(server, u).send('hold', HELD)).result ? true : undefined));
  });

  it('the open-stream cap refuses a further stream until one closes; the refused send created no task', async () => {
    const u = await newTenant(server, 'streamer');
    await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { max_open_streams: 1, sends_per_minute: 0 });
    const task = await on(server, u).send('hold', HELD);
    const id = task.result.task.id;
    const ctl = new AbortController();
    const first = await fetch(`${server.url}/v1/a2a/agents/index/tasks/${id}:subscribe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.token}`, ...V1 },
      signal: ctl.signal,
    });
    assert.equal(first.status, 200);
    const before = (await u.client.get('/v1/requests?limit=50')).body.items.length;
    // Refused before it streams: a plain JSON-RPC reply.
    const refused = await on(server, u).call('SendStreamingMessage', sendParams('x', HELD));
    assert.match(refused.error!.message, /open-stream cap reached/);
    assert.equal((await u.client.get('/v1/requests?limit=50')).body.items.length, before, 'no task was created');
    const tail = await u.client.get(`/v1/requests/${id}/events`);
    assert.equal(tail.status, 429);
    ctl.abort();
    await waitFor(async () => ((await u.client.get(`/v1/requests/${id}`)).status === 200 ? true : undefined));
    await waitFor(async () => {
      const r = await fetch(`${server.url}/v1/a2a/agents/index/tasks/${id}:subscribe`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.token}`, ...V1 },
      });
      const ok = r.status === 200;
      await r.body?.cancel();
      return ok ? true : undefined;
    });
  });
});

describe(
  'quotas across two replicas on one PostgreSQL',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let a: TestServer;
    let b: TestServer;
    let up: Upstream;
    /**
     * Each replica shares its counts every ARBITER_QUOTA_SYNC_MS; here the test runs that sync itself (the interval
     * is longer than the test), so "B has heard of A's sends" is a fact, not a sleep: A and B push what they
     * counted, then each reads the other's (a sync that was already under way may predate the last send: twice each).
     */
    const shareCounts = async (): Promise<void> => {
      for (const s of [a, a, b, b, a, a]) {
        await s.running.app.get(PgThrottlerStorage).sync();
        await s.running.app.get(UsageService).sync();
      }
    };
    before(async () => {
      db = await freshDatabase();
      up = await startUpstream();
      // The upstream of a remote-backed agent is on loopback: the operator's switch lets registry entries reach it.
      const env = {
        ARBITER_TENANT_SENDS_PER_MINUTE: '4',
        ARBITER_QUOTA_SYNC_MS: '60000',
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
      };
      a = await startTestServer({ env, db });
      b = await startTestServer({ env, db });
    });
    after(async () => {
      await b?.close();
      await a?.close();
      await up?.close();
      await db?.drop();
    });

    it('one send budget and one running cap for the tenant, whichever replica takes the request', async () => {
      await inOneQuotaWindow(async () => {
        const t = await newTenant(a, 'shared');
        for (const s of [a, a, b, b]) {
          assert.ok((await on(s, t).send('hi', HELD)).result);
          await shareCounts();
        }
        for (const s of [a, b]) assert.match((await on(s, t).send('hi', HELD)).error?.message ?? '', /send quota/);
      });
      const t = await newTenant(a, 'shared-runs');
      await a.admin.patch(`/v1/admin/tenants/${t.id}/limits`, { sends_per_minute: 0, max_running_tasks: 1 });
      assert.ok((await on(a, t).send('hold', HELD)).result);
      await shareCounts();
      assert.match((await on(b, t).send('hold', HELD)).error?.message ?? '', /running-task cap/);
    });

    it('a remote-backed agent at running-task cap 1: sends racing over both replicas start one task, the rest are refused, and the upstream hears one', async () => {
      const t = await newTenant(a, 'shared-remote');
      const limits = await a.admin.patch(`/v1/admin/tenants/${t.id}/limits`, {
        sends_per_minute: 0,
        max_running_tasks: 1,
      });
      assert.equal(limits.status, 200, limits.text);
      assert.equal((await t.client.post('/v1/remote-agents', { name: 'vendor', url: `${up.url}/rpc` })).status, 201);
      await newAgent(t, { id: 'gw', backend: { remote: 'vendor' } });
      const gw = (s: TestServer) => a2a(s.url, t.token, 'gw', V1);
      const cap = /running-task cap reached: this tenant may run 1 tasks at once/;
      // Each replica lets one through by its own count; the creation's statement refuses the other replica's
      // (and any later one there): a run so abandoned must not reach the upstream.
      const replies = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const res = await gw(i % 2 ? b : a).post('SendMessage', sendParams('hold', HELD));
          return { res, body: (await res.json()) as RpcReply };
        }),
      );
      const started = replies.filter((r) => r.body.result).map((r) => String(r.body.result.task.id));
      assert.equal(started.length, 1, JSON.stringify(replies.map((r) => r.body)));
      for (const { res, body } of replies.filter((r) => !r.body.result)) {
        assert.equal(body.error?.code, -32000, JSON.stringify(body));
        assert.match(body.error.message, cap);
        assert.equal(errorInfo(body).reason, 'RESOURCE_EXHAUSTED');
        assert.equal(errorInfo(body).metadata.retryable, 'true');
        assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After');
      }
      const [heldId] = started;
      // The held task follows its upstream task, which said "holding".
      await waitFor(async () => {
        const held = (await gw(b).get(heldId)).result;
        return typeof held?.metadata?.['x-arbiter.upstream_task_id'] === 'string' &&
          held.status?.message?.parts?.[0]?.text === 'holding'
          ? true
          : undefined;
      });
      const listed = (await gw(b).list({ pageSize: 50 })).result.tasks as { id: string }[];
      assert.deepEqual(
        listed.map((x) => x.id),
        [heldId],
      );
      assert.deepEqual(up.messages(), ['hold'], 'the upstream heard the task started, and none refused');

      // The held task ends: the next send is taken (refused only while its run winds down) and answered.
      assert.equal((await gw(a).cancel(heldId)).result?.status?.state, 'TASK_STATE_CANCELED');
      const taken = await waitFor(async () => {
        const r = await gw(b).send('after the race');
        if (r.result) return r;
        assert.match(r.error?.message ?? '', cap, JSON.stringify(r));
        return undefined;
      });
      assert.equal(taken.result.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(taken));
      assert.deepEqual(up.messages(), ['hold', 'after the race']);
    });
  },
);
