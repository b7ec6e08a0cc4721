import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { a2a, followSse, readSse, waitFor, answerOf } from '../helpers/a2a.js';
import { Barrier, within } from '../helpers/patience.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Two replicas (child processes) on one PostgreSQL database: any replica
 * serves any task of its tenant, live, with no gap and no duplicate.
 */
describe('two replicas on one PostgreSQL', { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' }, () => {
  let db: TestDatabase;
  let fake: FakeProvider;
  let a: ServerProcess;
  let b: ServerProcess;
  /** A third replica that reaches the database through a proxy the test can cut. */
  let c: ServerProcess;
  let proxy: TcpProxy;
  let token: string;
  const homes: string[] = [];
  const admin = `adm_${'r'.repeat(40)}`;

  before(async () => {
    db = await freshDatabase();
    fake = new FakeProvider();
    await fake.start();
    const env = (home: string) => ({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      DATABASE_URL: db.url!,
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ARBITER_DEFAULT_MODEL: 'echo',
      ARBITER_ECHO_CHUNKS: '12',
      ARBITER_ECHO_DELAY_MS: '60',
      // Leases far longer than any test: what stops or hands over a run here is a notice, never a lease running out.
      ARBITER_LEASE_MS: '600000',
    });
    homes.push(tempHome(), tempHome(), tempHome());
    const target = new URL(db.url!);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const viaProxy = new URL(db.url!);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    // Started together: replicas that start at once take turns on the migrations (an advisory lock).
    [a, b, c] = await Promise.all([
      startServerProcess(env(homes[0])),
      startServerProcess(env(homes[1])),
      startServerProcess({ ...env(homes[2]), DATABASE_URL: viaProxy.toString() }),
    ]);
    const created = await new HttpClient(a.url).withToken(admin).post('/v1/admin/tenants', { name: 'replicas' });
    token = created.body.token.token as string;
    const agent = await new HttpClient(a.url).withToken(token).post('/v1/agents', { id: 'slow', model: 'openai/slow' });
    assert.equal(agent.status, 201);
  });
  after(async () => {
    await a?.stop('SIGTERM');
    await b?.stop('SIGTERM');
    await c?.stop('SIGKILL');
    await proxy?.stop();
    await fake?.stop();
    await db?.drop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  /** The tenant's JSON-RPC calls to `agent` on one replica. */
  const on = (server: ServerProcess, agent = 'index') => a2a(server.url, token, agent);
  /** A send that returns at once: the run goes on on that replica. */
  const HELD = { returnImmediately: true };

  it('a run on A is live-tailed on B: the exact log, gap-free, no duplicate, ending with the terminal event', async () => {
    const text = 'one two three four five six seven eight nine ten eleven twelve';
    const taskId = (await on(a).send(text, HELD)).result.task.id as string;
    // B: the raw log from seq 0, while A is still writing it; and an A2A subscription.
    const [log, subscription] = await Promise.all([
      fetch(`${b.url}/v1/requests/${taskId}/events?format=log`, { headers: { authorization: `Bearer ${token}` } }).then(
        readSse,
      ),
      on(b).subscribe(taskId).ended,
    ]);
    const seqs = log.events.map((e) => Number(e.id));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'gap-free from 1, no duplicate',
    );
    const last = log.events.at(-1)!;
    assert.equal(last.event, 'status');
    assert.equal(last.data.state, 'TASK_STATE_COMPLETED');
    const chunks = log.events.filter((e) => e.event === 'artifact').map((e) => e.data.artifact.parts[0].text ?? '');
    assert.ok(chunks.length > 3, `text arrived in pieces (${chunks.length})`);
    assert.equal(chunks.join(''), text);
    // The same as the stored log, read afterwards from A.
    const stored = await fetch(`${a.url}/v1/requests/${taskId}/events?format=log`, {
      headers: { authorization: `Bearer ${token}` },
    }).then(readSse);
    assert.deepEqual(
      log.events.map((e) => [e.id, e.event]),
      stored.events.map((e) => [e.id, e.event]),
    );
    const final = subscription.events.at(-1)!.data.result;
    assert.equal(final.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(final.statusUpdate.status.message, undefined, '§3.7: the answer is on the artifact');
  });

  it('cancel on B stops the run held on A at once (the provider request closes) and the task ends canceled once', async () => {
    const closedBefore = fake.closedEarly;
    const taskId = (await on(a, 'slow').send('slow', HELD)).result.task.id as string;
    const clientB = new HttpClient(b.url).withToken(token);
    await waitFor(async () =>
      (await clientB.get(`/v1/requests/${taskId}`)).body.artifacts.length > 0 ? true : undefined,
    );
    assert.equal((await on(b, 'slow').cancel(taskId)).result.status.state, 'TASK_STATE_CANCELED');
    // The notice stopped it: with leases of ten minutes, nothing else would within the wait's bound.
    await waitFor(() => Promise.resolve(fake.closedEarly > closedBefore ? true : undefined));
    const log = await fetch(`${a.url}/v1/requests/${taskId}/events?format=log`, {
      headers: { authorization: `Bearer ${token}` },
    }).then(readSse);
    const terminal = log.events.filter((e) => e.event === 'status' && /COMPLETED|FAILED|CANCELED/.test(e.data.state));
    assert.equal(terminal.length, 1);
    assert.equal(terminal[0].data.state, 'TASK_STATE_CANCELED');
    assert.equal(log.events.at(-1)!.id, terminal[0].id, 'nothing after the terminal event');
  });

  it('the same messageId sent to A and B at once makes one task and one run', async () => {
    const messageId = crypto.randomUUID();
    const before = fake.requests.length;
    const [ra, rb] = await Promise.all([
      on(a, 'slow').send(`say once only ${messageId}`, { messageId }),
      on(b, 'slow').send(`say once only ${messageId}`, { messageId }),
    ]);
    assert.ok(ra.result?.task && rb.result?.task, JSON.stringify([ra, rb]));
    const [ta, tb] = [ra.result.task, rb.result.task];
    assert.equal(ta.id, tb.id);
    assert.equal(ta.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(tb.status.state, 'TASK_STATE_COMPLETED', 'the second request waited for the first one’s run');
    assert.equal(fake.requests.length - before, 1, 'one model call');
    const listed = await new HttpClient(b.url).withToken(token).get('/v1/requests?agent_id=slow&limit=100');
    assert.equal(listed.body.items.filter((t: any) => t.id === ta.id).length, 1);
  });

  it('a continuation sent to B reaches the turn running on A: blocking and streaming replies as on A', async () => {
    for (const streaming of [false, true]) {
      const taskId = (await on(a).send('hold', HELD)).result.task.id as string;
      const words = `continued on the other replica ${streaming ? 'streaming' : 'blocking'}`;
      if (!streaming) {
        const reply = await on(b).send(words, { taskId });
        assert.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(reply));
        assert.equal(answerOf(reply.result.task), words);
      } else {
        const frames = (await on(b).stream(words, { taskId }).ended).events.map((e) => e.data.result);
        assert.ok(frames[0].task, 'the Task frame first');
        const last = frames.at(-1);
        assert.equal(last.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
        const text = frames
          .filter((f) => f.artifactUpdate)
          .map((f) => f.artifactUpdate.artifact.parts.map((p: any) => p.text ?? '').join(''))
          .join('');
        assert.equal(text, words);
      }
      // One run, on A: the log has one working status after the continuation, none written by B.
      const log = await readSse(
        await fetch(`${a.url}/v1/requests/${taskId}/events?format=log`, {
          headers: { authorization: `Bearer ${token}` },
        }),
      );
      assert.deepEqual(
        log.events.filter((e) => e.event === 'status').map((e) => e.data.state),
        ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'],
      );
    }
  });

  it('an input-required task continued on B gets its next turn on B', async () => {
    const asked = await on(a).send('ask');
    assert.equal(asked.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED');
    const taskId = asked.result.task.id as string;
    const reply = await on(b).send('the answer', { taskId });
    assert.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(answerOf(reply.result.task), 'the answer');
  });

  it('cached tokens and agents: a rotation, a revocation or an agent change through A is in force on B at once', async () => {
    const adminA = new HttpClient(a.url).withToken(admin);
    const tenant = (await adminA.post('/v1/admin/tenants', { name: 'cached-across' })).body;
    const old = tenant.token.token as string;
    /** A call with `tok`: its HTTP status says whether the token was taken. */
    const send = (server: ServerProcess, tok: string, agent = 'index') =>
      a2a(server.url, tok, agent).post('GetTask', { id: 'none' });
    // B verifies (and caches) the token, many times.
    for (let i = 0; i < 5; i++) assert.equal((await send(b, old)).status, 200);
    const rotated = await adminA.post(`/v1/admin/tenants/${tenant.tenant.id}/tokens/rotate`);
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    // The very next request on B, with no pause: refused.
    assert.equal((await send(b, old)).status, 401);
    const fresh = rotated.body.token.token as string;
    assert.equal((await send(b, fresh)).status, 200);
    const extra = (await adminA.post(`/v1/admin/tenants/${tenant.tenant.id}/tokens`)).body;
    assert.equal((await send(b, extra.token as string)).status, 200);
    assert.equal((await adminA.delete(`/v1/admin/tenants/${tenant.tenant.id}/tokens/${extra.id}`)).status, 200);
    assert.equal((await send(b, extra.token as string)).status, 401);
    // A stored agent read (and cached) on B, deleted and re-created through A: B serves what A wrote.
    const userA = new HttpClient(a.url).withToken(fresh);
    const userB = new HttpClient(b.url).withToken(fresh);
    assert.equal((await userA.post('/v1/agents', { id: 'cached', role: 'first' })).status, 201);
    assert.equal((await userB.get('/v1/agents/cached')).body.agent_def.role, 'first');
    assert.equal((await send(b, fresh, 'cached')).status, 200);
    assert.equal((await userA.patch('/v1/agents/cached', { role: 'second' })).status, 200);
    assert.equal((await userB.get('/v1/agents/cached')).body.agent_def.role, 'second');
    assert.equal((await userA.delete('/v1/agents/cached')).status, 204);
    assert.equal((await userB.get('/v1/agents/cached')).status, 404);
    const gone = (await (await send(b, fresh, 'cached')).json()) as { error?: { code: number } };
    assert.ok(gone.error, 'a deleted agent answers with an error on B');
    // Disabling the tenant through A: B refuses at once.
    assert.equal((await adminA.patch(`/v1/admin/tenants/${tenant.tenant.id}`, { disabled: true })).status, 200);
    assert.equal((await send(b, fresh)).status, 401);
  });

  it('a stream open on B ends with a clear last frame when its token is revoked through A', async () => {
    const adminA = new HttpClient(a.url).withToken(admin);
    const tenant = (await adminA.post('/v1/admin/tenants', { name: 'revoked-across' })).body;
    const tok = tenant.token.token as string;
    const taskId = (await a2a(a.url, tok).send('hold', HELD)).result.task.id as string;
    const watching = followSse(
      fetch(`${b.url}/v1/requests/${taskId}/events`, {
        headers: { authorization: `Bearer ${tok}` },
      }),
    );
    await watching.opened; // open (and held) on B
    const revoked = await adminA.delete(`/v1/admin/tenants/${tenant.tenant.id}/tokens/${tenant.token.id}`);
    assert.equal(revoked.status, 200);
    // Ended by the notice (the held task's stream would not end otherwise; the bound only stops a hang).
    const log = await within(watching.ended, 'the stream on B to end');
    const last = log.events.at(-1)!;
    assert.equal(last.event, 'error');
    assert.equal(last.data.error_code, 'unauthorized');
    assert.match(last.data.message, /revoked/);
    // The task itself goes on (another token of the tenant may still watch it); the operator ends it.
    const canceled = await adminA.post(`/v1/admin/tasks/${taskId}/cancel`);
    assert.equal(canceled.body.state, 'canceled');
  });

  it('a replica that loses its database connections (notices included) catches up from the log when they return', async () => {
    // The model sends its first piece, and the rest only while C is cut off: A writes them all during the outage.
    const cut = new Barrier(1);
    const text = Array.from({ length: 12 }, (_, i) => `part${i}`).join(' ');
    fake.scripts.set('catch-up', () => ({ text, continueWhen: cut.reached }));
    const clientA = new HttpClient(a.url).withToken(token);
    assert.equal((await clientA.post('/v1/agents', { id: 'catcher', model: 'openai/catch-up' })).status, 201);
    const taskId = (await on(a, 'catcher').send('go', HELD)).result.task.id as string;
    const watching = followSse(
      fetch(`${c.url}/v1/requests/${taskId}/events?format=log`, {
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    await watching.opened; // C is tailing the task
    await proxy.cut(); // C's pool and its LISTEN connection drop; A keeps writing
    void cut.arrive();
    await waitFor(async () =>
      (await clientA.get(`/v1/requests/${taskId}`)).body.state === 'completed' ? true : undefined,
    );
    await proxy.restore();
    const log = await within(watching.ended, 'C to catch up');
    const seqs = log.events.map((e) => Number(e.id));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'gap-free across the outage',
    );
    assert.equal(log.events.at(-1)!.data.state, 'TASK_STATE_COMPLETED');
    const chunks = log.events.filter((e) => e.event === 'artifact').map((e) => e.data.artifact.parts[0].text ?? '');
    assert.equal(chunks.join(''), text);
  });
});
