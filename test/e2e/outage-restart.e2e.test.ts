import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { a2a, answerOf } from '../helpers/a2a.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { HttpClient } from '../helpers/http.js';
import { createPrivateCluster, privateClusterUnavailable, type PrivateCluster } from '../helpers/private-cluster.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { PATIENCE_MS } from '../helpers/patience.js';

const LEASE_MS = 1_500;
const ROUNDS = 3;

const unavailable = !REAL_POSTGRES ? 'needs a PostgreSQL server' : privateClusterUnavailable();

/**
 * A real database restart — the server stopped (`-m fast`) for several
 * leases and started again, on a cluster of the test's own — with two
 * replicas holding runs, idle (waiting for a message) and busy (streaming
 * from a model), round after round. No replica may end another's live run:
 * after each restart every idle run answers its next message, and no task
 * anywhere is ended "owner lost".
 */
describe(`database restarts (a private cluster, ARBITER_LEASE_MS=${LEASE_MS})`, { skip: unavailable }, () => {
  let cluster: PrivateCluster;
  let fake: FakeProvider;
  let a: ServerProcess;
  let b: ServerProcess;
  let token: string;
  const homes = [tempHome(), tempHome()];
  const admin = `adm_${'r'.repeat(40)}`;

  before(async () => {
    cluster = await createPrivateCluster();
    fake = new FakeProvider();
    await fake.start();
    const env = (home: string) => ({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      DATABASE_URL: cluster.url,
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ARBITER_DEFAULT_MODEL: 'echo',
      ARBITER_LEASE_MS: String(LEASE_MS),
    });
    a = await startServerProcess(env(homes[0]));
    b = await startServerProcess(env(homes[1]));
    const created = await new HttpClient(a.url).withToken(admin).post('/v1/admin/tenants', { name: 'restarts' });
    token = created.body.token.token as string;
    const agent = await new HttpClient(a.url).withToken(token).post('/v1/agents', { id: 'slow', model: 'openai/slow' });
    assert.equal(agent.status, 201, agent.text);
  });
  after(async () => {
    await a?.stop('SIGKILL');
    await b?.stop('SIGKILL');
    await fake?.stop();
    await cluster?.drop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  const start = async (server: ServerProcess, agent: string, text: string): Promise<string> => {
    const r = await a2a(server.url, token, agent).send(text, { returnImmediately: true });
    assert.ok(r.result?.task?.id, JSON.stringify(r));
    return r.result.task.id as string;
  };
  const until = async (what: string, cond: () => Promise<boolean>): Promise<void> => {
    const end = Date.now() + PATIENCE_MS;
    while (!(await cond().catch(() => false))) {
      assert.ok(Date.now() < end, `waited for ${what}`);
      await sleep(100);
    }
  };
  const ready = (s: ServerProcess) => async () => (await fetch(`${s.url}/v1/health/ready`)).status === 200;

  it(`${ROUNDS} restarts longer than the lease end no live run; every idle run answers after each`, async () => {
    const endings = new Map<string, string>();
    for (let round = 1; round <= ROUNDS; round++) {
      // Idle runs on both replicas, and a run on each that is streaming from its model when the database goes.
      const idle = [
        ...(await Promise.all([1, 2, 3].map(() => start(a, 'index', 'hold')))),
        ...(await Promise.all([1, 2, 3].map(() => start(b, 'index', 'hold')))),
      ];
      const busy = [await start(a, 'slow', 'slow'), await start(b, 'slow', 'slow')];
      await cluster.stop();
      await sleep(3 * LEASE_MS); // down for three leases: every lease has run out when it comes back
      // Out of touch, each replica has fenced its runs: they wait before acting, they are not ended.
      for (const s of [a, b]) {
        const metrics = await (
          await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })
        ).text();
        const fences = Number(/^arbiter_lease_fences_total (\d+)/m.exec(metrics)?.[1]);
        assert.ok(fences >= round, `fenced ${fences} time(s) by round ${round}`);
      }
      await cluster.start();
      await until('both replicas to be ready again', async () => (await ready(a)()) && (await ready(b)()));
      await sleep(3 * LEASE_MS); // each replica has swept a dozen times since
      // Every idle run is alive: a message sent through the other replica reaches it, and it answers.
      const replies = await Promise.all(
        idle.map((taskId, i) => a2a((i < 3 ? b : a).url, token).send(`round ${round}`, { taskId })),
      );
      replies.forEach((r, i) => {
        assert.equal(
          r.result?.task?.status?.state,
          'TASK_STATE_COMPLETED',
          `round ${round}, ${idle[i]}: ${JSON.stringify(r)}`,
        );
        assert.equal(answerOf(r.result.task), `round ${round}`);
      });
      for (const id of [...idle, ...busy]) {
        const t = (await new HttpClient(a.url).withToken(token).get(`/v1/requests/${id}`)).body;
        endings.set(id, `${t.state}: ${t.error ?? ''}`);
      }
    }
    // A busy run may have been ended by its own replica (it could not store its stream); never by the other.
    const lost = [...endings].filter(([, e]) => e.includes('owner lost'));
    assert.deepEqual(lost, [], 'no task ended "owner lost"');
  });
});
