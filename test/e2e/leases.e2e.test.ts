import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import pg from 'pg';
import { a2a, waitFor, answerOf } from '../helpers/a2a.js';
import { metric } from '../helpers/metrics.js';
import { TIMEOUT_SCALE, within } from '../helpers/patience.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Short, so the test is quick, yet long enough for a replica to reconnect and renew within one lease after an
 * outage on a loaded machine (scaled with TEST_TIMEOUT_SCALE). The waits below are on signals — the database's
 * clock, the sweep counter — never on sleeps sized in leases.
 */
const LEASE_MS = Math.round(3_000 * TIMEOUT_SCALE);

/**
 * Leases under faults, with two replicas that each reach PostgreSQL through
 * a proxy the test owns (cut = that replica loses the database): an outage
 * longer than the lease kills no healthy run, a run whose task was ended
 * elsewhere stops as soon as its replica is back, and a continuation waiting
 * on a dead owner gets the sweep's verdict.
 */
describe(
  `leases across replicas (ARBITER_LEASE_MS=${LEASE_MS})`,
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let fake: FakeProvider;
    let proxyA: TcpProxy;
    let proxyB: TcpProxy;
    let a: ServerProcess;
    let b: ServerProcess;
    let token: string;
    const homes = [tempHome(), tempHome()];
    const admin = `adm_${'l'.repeat(40)}`;

    before(async () => {
      db = await freshDatabase();
      fake = new FakeProvider();
      await fake.start();
      const target = new URL(db.url!);
      const via = async (): Promise<[TcpProxy, string]> => {
        const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
        await proxy.start();
        const url = new URL(db.url!);
        url.host = `127.0.0.1:${proxy.port}`;
        return [proxy, url.toString()];
      };
      const [pa, urlA] = await via();
      const [pb, urlB] = await via();
      proxyA = pa;
      proxyB = pb;
      const env = (home: string, url: string) => ({
        ARBITER_HOME: home,
        ARBITER_ADMIN_TOKEN: admin,
        DATABASE_URL: url,
        OPENAI_BASE_URL: `${fake.url}/v1`,
        ARBITER_DEFAULT_MODEL: 'echo',
        ARBITER_ECHO_DELAY_MS: '5',
        ARBITER_LEASE_MS: String(LEASE_MS),
      });
      [a, b] = await Promise.all([startServerProcess(env(homes[0], urlA)), startServerProcess(env(homes[1], urlB))]);
      const created = await new HttpClient(b.url).withToken(admin).post('/v1/admin/tenants', { name: 'leases' });
      token = created.body.token.token as string;
      assert.equal(
        (await new HttpClient(b.url).withToken(token).post('/v1/agents', { id: 'slow', model: 'openai/slow' })).status,
        201,
      );
    });
    after(async () => {
      await a?.stop('SIGKILL');
      await b?.stop('SIGTERM');
      await proxyA?.stop();
      await proxyB?.stop();
      await fake?.stop();
      await db?.drop();
      for (const h of homes) rmSync(h, { recursive: true, force: true });
    });

    const start = async (server: ServerProcess, agent: string, text: string): Promise<string> =>
      (await a2a(server.url, token, agent).send(text, { returnImmediately: true })).result.task.id as string;
    const continueOn = (server: ServerProcess, taskId: string, text: string) =>
      a2a(server.url, token).send(text, { taskId });
    const stateOn = async (server: ServerProcess, taskId: string) =>
      (await new HttpClient(server.url).withToken(token).get(`/v1/requests/${taskId}`)).body;
    /** How many of `ids` have a lease that ran out, by the database's clock (read directly, not through a proxy). */
    const leasesExpired = async (ids: string[]): Promise<number> => {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        const { rows } = await c.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM a2a_tasks WHERE task_id = ANY($1) AND lease_expires_at < now()',
          [ids],
        );
        return rows[0].n;
      } finally {
        await c.end();
      }
    };
    const sweepsOf = (server: ServerProcess) =>
      metric(new HttpClient(server.url).withToken(admin), 'arbiter_lease_sweeps_total');

    it('a database outage longer than the lease ends no healthy run: after it, the runs answer', async () => {
      const held = await Promise.all([1, 2, 3, 4].map(() => start(a, 'index', 'hold')));
      await proxyA.cut();
      await proxyB.cut();
      // Longer than the lease: by the database's clock every held task's lease has run out.
      await waitFor(async () => ((await leasesExpired(held)) === held.length ? true : undefined));
      // B has the database back a moment before A (reconnects are not simultaneous).
      await proxyB.restore();
      await proxyA.restore();
      // B has swept several times since (a sweep counts once B is out of its quiet lease after the outage).
      const sweeps = await sweepsOf(b);
      await waitFor(async () => ((await sweepsOf(b)) >= sweeps + 3 ? true : undefined));
      for (const id of held) {
        const t = await stateOn(b, id);
        assert.equal(t.state, 'working', `${id} is still running: ${JSON.stringify(t)}`);
      }
      // And they are alive: a continuation sent to B reaches each run on A.
      const replies = await Promise.all(held.map((id, i) => continueOn(b, id, `still here ${i}`)));
      replies.forEach((r, i) => {
        assert.equal(r.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(r));
        assert.equal(answerOf(r.result.task), `still here ${i}`);
      });
    });

    it('a run whose task was ended elsewhere while its replica was cut off stops when the replica is back', async () => {
      const closedBefore = fake.closedEarly;
      const taskId = await start(a, 'slow', 'slow'); // streams from the provider until canceled
      await waitFor(async () => ((await stateOn(b, taskId)).artifacts.length > 0 ? true : undefined));
      await proxyA.cut();
      // B sees A's lease run out and ends the task: A is unreachable, so that is right.
      const ended = await waitFor(async () => {
        const t = await stateOn(b, taskId);
        return t.state === 'failed' ? t : undefined;
      });
      assert.equal(ended.error, 'owner lost');
      await proxyA.restore();
      // A hears of it (its renewal finds the task gone, or the notices catch up) and stops the provider call.
      await waitFor(() => Promise.resolve(fake.closedEarly > closedBefore ? true : undefined));
      const t = await stateOn(a, taskId);
      assert.equal(t.state, 'failed', 'the task stays as the sweep ended it');
    });

    it('a continuation waiting on a run whose replica died gets the sweep’s verdict', async () => {
      const taskId = await start(a, 'index', 'hold');
      await a.stop('SIGKILL');
      // Answered once B's sweep has ended the orphan (the bound only stops a hang).
      const reply = await within(continueOn(b, taskId, 'anyone there?'), 'the verdict on a dead owner');
      assert.equal(reply.result.task.status.state, 'TASK_STATE_FAILED', JSON.stringify(reply));
      assert.equal(reply.result.task.metadata['x-arbiter.error'], 'owner lost');
    });
  },
);
