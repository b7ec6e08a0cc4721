import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, readSse, sendParams, waitFor } from '../helpers/a2a.js';
import { metric } from '../helpers/metrics.js';
import { Barrier, within } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';

/**
 * PostgreSQL goes away under a running server (a proxy the test owns is cut)
 * and comes back: requests fail fast with retryable errors, readiness drops,
 * the service recovers by itself, and no task is left non-terminal.
 */
describe('database outage', { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' }, () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: TestServer;
  let t: TestTenant;
  let fake: FakeProvider;
  let upstream: Upstream;

  before(async () => {
    db = await freshDatabase();
    fake = new FakeProvider();
    await fake.start();
    upstream = await startUpstream();
    const target = new URL(db.url!);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const viaProxy = new URL(db.url!);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    server = await startTestServer({
      db: { url: viaProxy.toString(), drop: () => Promise.resolve() },
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-outage-0001',
        ARBITER_A2A_ALLOW_PRIVATE: 'true', // the remote agent is on loopback
      },
    });
    t = await newTenant(server, 'outage');
  });
  after(async () => {
    await server.close();
    await proxy.stop();
    await fake.stop();
    await upstream.close();
    await db.drop();
  });

  /** Resolves once the task has stored some of its answer. */
  const someTextStored = (taskId: string) =>
    waitFor(async () => ((await t.client.get(`/v1/requests/${taskId}`)).body.artifacts.length > 0 ? true : undefined));
  const noRunInFlight = () =>
    waitFor(async () => ((await metric(server.admin, 'arbiter_runs_in_flight')) === 0 ? true : undefined));
  /** Restores the proxy and waits for readiness. */
  const databaseBack = async () => {
    await proxy.restore();
    await waitFor(async () => ((await server.http.get('/v1/health/ready')).status === 200 ? true : undefined));
  };
  /**
   * Waits for the task to end; it ended `failed` for the outage, and its log is intact: gap-free, ending with the
   * one terminal event. Returns the log's events.
   */
  const endedForTheOutage = async (taskId: string) => {
    const after = await waitFor(async () => {
      const r = await t.client.get(`/v1/requests/${taskId}`);
      return r.status === 200 && !['working', 'submitted'].includes(r.body.state) ? r.body : undefined;
    });
    assert.equal(after.state, 'failed');
    assert.match(after.error, /^database_unavailable: /);
    const log = await readSse(
      await fetch(`${server.url}/v1/requests/${taskId}/events?format=log`, {
        headers: { authorization: `Bearer ${t.token}` },
      }),
    );
    const seqs = log.events.map((e) => Number(e.id));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
    );
    assert.equal(log.events.at(-1)!.data.state, 'TASK_STATE_FAILED');
    return log.events;
  };

  it('fails fast and retryably while the database is away, then recovers; the run in flight ends terminal', async () => {
    // The model sends its first words, and the rest only once the database is away.
    const away = new Barrier(1);
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    fake.scripts.set('outage-model', () => ({ text: words, continueWhen: away.reached }));
    await newAgent(t, { id: 'talker', model: 'openai/outage-model' });
    const started = await a2a(server.url, t.token, 'talker').send('go', { returnImmediately: true });
    const taskId = started.result.task.id as string;
    // The run is in flight: its first text is stored.
    await someTextStored(taskId);

    await proxy.cut();
    void away.arrive();
    // Fast: every request here is answered while the database is still away (none waits for it to return).
    await within(
      (async () => {
        const rest = await t.client.get('/v1/agents');
        assert.equal(rest.status, 503);
        assert.equal(rest.body.code, 'unavailable');
        assert.equal(rest.headers.get('retry-after'), '1');
        const jsonRpc = await a2a(server.url, t.token).post('SendMessage', sendParams('hello'));
        assert.equal(jsonRpc.status, 503);
        const body = (await jsonRpc.json()) as any;
        assert.equal(body.error.code, -32603);
        assert.match(body.error.message, /database unavailable; retry the request/);
        assert.ok(
          JSON.stringify(body.error.data).includes('database_unavailable'),
          `the reason is in the error data: ${JSON.stringify(body.error.data)}`,
        );
        const ready = await server.http.get('/v1/health/ready');
        assert.equal(ready.status, 503);
        assert.equal((await server.http.get('/v1/health')).status, 200, 'liveness is not readiness');
      })(),
      'the answers while the database is away',
    );
    // The run ends during the outage (its next write fails); its end is recorded once the database is back.
    await noRunInFlight();
    await databaseBack();
    await endedForTheOutage(taskId);
    // And the service works again by itself.
    const again = await a2a(server.url, t.token).send('back again');
    assert.equal(again.result.task.status.state, 'TASK_STATE_COMPLETED');
  });

  it('a run whose streamed text could not be stored stops and ends failed, though the database is back before its answer', async () => {
    // The model sends its first words, the rest once the database is away, and its end only when the test says.
    const away = new Barrier(1);
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const words = Array.from({ length: 40 }, (_, i) => `v${i}`).join(' ');
    fake.scripts.set('gap-model', () => ({ text: words, continueWhen: away.reached, endWhen: answered }));
    await newAgent(t, { id: 'gapped', model: 'openai/gap-model' });
    const closedBefore = fake.closedEarly;
    const started = await a2a(server.url, t.token, 'gapped').send('go', { returnImmediately: true });
    const taskId = started.result.task.id as string;
    await someTextStored(taskId);

    await proxy.cut();
    void away.arrive();
    // The words sent meanwhile cannot be stored: the run stops at once — it does not wait for the model's answer
    // (which would complete a task whose log lacks part of it) — and hangs up on the model.
    await noRunInFlight();
    await waitFor(async () => (fake.closedEarly > closedBefore ? true : undefined));
    await databaseBack();
    answer();
    const events = await endedForTheOutage(taskId);
    assert.equal(events.filter((e) => e.data.state === 'TASK_STATE_COMPLETED').length, 0);
  });

  it('a remote-backed run stopped by a failed write ends failed and leaves the remote agent’s task alone', async () => {
    const entry = await t.client.post('/v1/remote-agents', { name: 'paced', url: `${upstream.url}/rpc` });
    assert.equal(entry.status, 201, entry.text);
    await newAgent(t, { id: 'relay', backend: { remote: 'paced' } });
    const started = await a2a(server.url, t.token, 'relay').send('script', { returnImmediately: true });
    const taskId = started.result.task.id as string;
    upstream.step(); // "step one" and the artifact's first text
    await someTextStored(taskId);

    await proxy.cut();
    upstream.step(); // its next chunk and "step two", which cannot be stored
    await noRunInFlight();
    await databaseBack();
    await endedForTheOutage(taskId);
    // The remote agent's task goes on: a replica following it later would need it.
    assert.equal(upstream.canceled.size, 0, 'no cancel was sent upstream');
    upstream.step(); // and it completes
  });
});
