import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, followSse, readSse, waitFor } from '../helpers/a2a.js';
import { within } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Revoking a token or disabling a tenant stops what is already running
 * under it: its open streams and blocking sends end with a clear last frame
 * or error; the operator can cancel any task, and a tenant's running tasks
 * when disabling it.
 */
describe('access revoked while requests are open', () => {
  let server: TestServer;
  before(async () => {
    // Held tasks are left running at the end: no need to wait for them at shutdown.
    server = await startTestServer({ env: { ARBITER_SHUTDOWN_GRACE_MS: '100' } });
  });
  after(() => server.close());

  /** A task held open by the echo model's `hold`, started with `token`. */
  const holdTask = async (token: string): Promise<string> =>
    (await a2a(server.url, token).send('hold', { returnImmediately: true })).result.task.id as string;

  /** Every long request a client can hold with `token` (a fresh tenant's only token), on one held task each. */
  const openAll = async (token: string) => {
    const [a, b] = [await holdTask(token), await holdTask(token)];
    const native = followSse(
      fetch(`${server.url}/v1/requests/${a}/events`, {
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    const agent = a2a(server.url, token);
    const subscribe = agent.subscribe(b);
    const streaming = agent.stream('hold');
    const blocking = agent.send('hold');
    const chat = followSse(
      fetch(`${server.url}/v1/agents/index/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hold' }),
      }),
    );
    // All of them are open and waiting: each stream has sent its first event, and the blocking send's task exists
    // (the server holds a request with its token before it reads the body: a task means the wait is held).
    await Promise.all([native.opened, subscribe.opened, streaming.opened, chat.opened]);
    const client = server.as(token);
    await waitFor(async () => ((await client.get('/v1/requests?limit=50')).body.items.length >= 5 ? true : undefined));
    return {
      tasks: [a, b],
      native: native.ended,
      subscribe: subscribe.ended,
      streaming: streaming.ended,
      blocking,
      chat: chat.ended,
    };
  };

  const expectEnded = async (open: Awaited<ReturnType<typeof openAll>>, reason: RegExp) => {
    // Ended by the change itself: nothing else would end these held tasks' streams (the bound only stops a hang).
    const [native, subscribe, streaming, blocking, chat] = await within(
      Promise.all([open.native, open.subscribe, open.streaming, open.blocking, open.chat]),
      'the open requests to end',
    );
    for (const s of [native, chat]) {
      const last = s.events.at(-1)!;
      assert.equal(last.event, 'error');
      assert.equal(last.data.error_code, 'unauthorized');
      assert.match(last.data.message, reason);
    }
    for (const s of [subscribe, streaming]) {
      const last = s.events.at(-1)!.data;
      assert.equal(last.error.code, -32000, JSON.stringify(last));
      assert.match(last.error.message, reason);
      assert.equal(last.error.data.at(-1).reason, 'UNAUTHENTICATED');
    }
    assert.equal(blocking.error?.code, -32000, JSON.stringify(blocking));
    assert.match(blocking.error.message, reason);
  };

  it('revoking a token ends every stream and wait opened with it; the tasks go on for the other tokens', async () => {
    const t = await newTenant(server, 'revoke-one');
    const second = (await server.admin.post(`/v1/admin/tenants/${t.id}/tokens`)).body.token as string;
    const open = await openAll(t.token);
    const revoked = await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${t.tokenId}`);
    assert.equal(revoked.status, 200);
    await expectEnded(open, /revoked/);
    for (const id of open.tasks) {
      assert.equal((await server.as(second).get(`/v1/requests/${id}`)).body.state, 'working');
    }
    assert.equal((await t.client.get('/v1/agents')).status, 401, 'and the token is refused from now on');
  });

  it('rotating the tokens ends the streams of the old ones', async () => {
    const t = await newTenant(server, 'rotate');
    const open = await openAll(t.token);
    assert.equal((await server.admin.post(`/v1/admin/tenants/${t.id}/tokens/rotate`)).status, 201);
    await expectEnded(open, /revoked/);
  });

  it('disabling a tenant ends its streams; its tasks keep running unless cancel_running is set', async () => {
    const t = await newTenant(server, 'disable');
    const open = await openAll(t.token);
    const disabled = await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true });
    assert.equal(disabled.status, 200);
    assert.equal(disabled.body.canceled_tasks, undefined);
    await expectEnded(open, /tenant was disabled/);
    await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: false });
    for (const id of open.tasks) assert.equal((await t.client.get(`/v1/requests/${id}`)).body.state, 'working');
  });

  it('disabling with cancel_running: true cancels the tenant’s unfinished tasks, audited', async () => {
    const t = await newTenant(server, 'disable-cancel');
    const other = await newTenant(server, 'bystander');
    const mine = [await holdTask(t.token), await holdTask(t.token), await holdTask(t.token)];
    const theirs = await holdTask(other.token);
    const res = await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true, cancel_running: true });
    assert.equal(res.status, 200);
    assert.equal(res.body.disabled, true);
    assert.equal(res.body.canceled_tasks, 3);
    await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: false });
    for (const id of mine) {
      const task = (await t.client.get(`/v1/requests/${id}`)).body;
      assert.equal(task.state, 'canceled');
      assert.equal(task.error, 'tenant disabled');
    }
    assert.equal(
      (await other.client.get(`/v1/requests/${theirs}`)).body.state,
      'working',
      'another tenant is untouched',
    );
    const audit = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}`);
    const entry = audit.body.items.find((e: any) => e.action === 'tenant.cancel_running');
    assert.deepEqual(entry?.detail, { canceled_tasks: 3 });
    assert.equal(
      (await server.admin.patch(`/v1/admin/tenants/${t.id}`, { disabled: true, cancel_now: true })).status,
      400,
    );
  });

  it('the operator cancels any tenant’s task: POST /v1/admin/tasks/:id/cancel, audited', async () => {
    const t: TestTenant = await newTenant(server, 'operator');
    const id = await holdTask(t.token);
    const watching = fetch(`${server.url}/v1/requests/${id}/events`, {
      headers: { authorization: `Bearer ${t.token}` },
    }).then(readSse);
    const res = await server.admin.post(`/v1/admin/tasks/${id}/cancel`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.tenant_id, t.id);
    assert.equal(res.body.state, 'canceled');
    assert.equal(res.body.error, 'canceled by operator');
    const done = (await watching).events.at(-1)!;
    assert.equal(done.event, 'done');
    assert.equal(done.data.error_code, 'cancelled');
    const audit = await server.admin.get(`/v1/admin/audit?tenant_id=${t.id}`);
    const entry = audit.body.items.find((e: any) => e.action === 'task.cancel');
    assert.equal(entry?.detail.task_id, id);
    assert.equal((await server.admin.post(`/v1/admin/tasks/${id}/cancel`)).status, 409, 'already ended');
    assert.equal((await server.admin.post('/v1/admin/tasks/no-such-task/cancel')).status, 404);
    assert.equal((await t.client.post(`/v1/admin/tasks/${id}/cancel`)).status, 403, 'tenant tokens cannot');
    await waitFor(async () =>
      (await t.client.get(`/v1/requests/${id}`)).body.state === 'canceled' ? true : undefined,
    );
  });
});

describe('two applications in one process', () => {
  it('each verifies only its own admin and tenant tokens (passport instance per application)', async () => {
    const a = await startTestServer();
    const b = await startTestServer();
    try {
      const ta = await newTenant(a, 'one');
      const tb = await newTenant(b, 'two');
      assert.equal((await a.admin.get('/v1/admin/tenants')).status, 200);
      assert.equal((await b.admin.get('/v1/admin/tenants')).status, 200);
      assert.equal((await a.as(b.adminToken).get('/v1/admin/tenants')).status, 401);
      assert.equal((await b.as(a.adminToken).get('/v1/admin/tenants')).status, 401);
      assert.equal((await a.as(ta.token).get('/v1/agents')).status, 200);
      assert.equal((await b.as(tb.token).get('/v1/agents')).status, 200);
      assert.equal((await b.as(ta.token).get('/v1/agents')).status, 401);
      assert.equal((await a.as(tb.token).get('/v1/agents')).status, 401);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
