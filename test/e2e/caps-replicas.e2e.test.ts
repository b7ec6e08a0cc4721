import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { a2a } from '../helpers/a2a.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { inOneQuotaWindow } from '../helpers/quota-window.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PATIENCE_MS } from '../helpers/patience.js';

const CAP = 10;

/**
 * Caps are promises across replicas: three replicas on one PostgreSQL,
 * requests racing over all three. The running-task cap holds exactly (the
 * database admits what fits, in the statement that creates the task), and
 * so does the send rate (each replica admits only what the database granted it).
 */
describe(
  'caps across three replicas on one PostgreSQL',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let replicas: TestServer[];
    let sql: pg.Client;
    before(async () => {
      db = await freshDatabase();
      const env = { ARBITER_QUOTA_SYNC_MS: '100' };
      replicas = [];
      for (let i = 0; i < 3; i++) replicas.push(await startTestServer({ env, db }));
      sql = new pg.Client({ connectionString: db.url });
      await sql.connect();
    });
    after(async () => {
      await sql?.end();
      for (const r of replicas ?? []) await r.close();
      await db?.drop();
    });

    /** A send that returns at once: a held task stays running. */
    const HELD = { returnImmediately: true };
    const on = (s: TestServer, t: TestTenant) => a2a(s.url, t.token);
    const running = async (tenantId: string): Promise<{ counted: number; actual: number }> => {
      const { rows } = await sql.query<{ counted: number; actual: number }>(
        `SELECT (SELECT running FROM tenant_running WHERE tenant_id = $1) AS counted,
              (SELECT count(*)::int FROM a2a_tasks WHERE tenant_id = $1
                 AND state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')) AS actual`,
        [tenantId],
      );
      return rows[0];
    };
    const until = async (what: string, cond: () => Promise<boolean>): Promise<void> => {
      const end = Date.now() + PATIENCE_MS;
      while (!(await cond())) {
        assert.ok(Date.now() < end, `waited for ${what}`);
        await sleep(50);
      }
    };

    it(`the running-task cap holds exactly: 60 racing sends over three replicas start ${CAP}, three rounds out of three`, async () => {
      const t = await newTenant(replicas[0], 'capped');
      const limits = await replicas[0].admin.patch(`/v1/admin/tenants/${t.id}/limits`, {
        max_running_tasks: CAP,
        sends_per_minute: 0,
      });
      assert.equal(limits.status, 200, limits.text);
      for (let round = 1; round <= 3; round++) {
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) => on(replicas[i % 3], t).send('hold', HELD)),
        );
        const started = results.filter((r) => r.result).map((r) => r.result.task.id as string);
        const refused = results.filter((r) => r.error);
        assert.equal(started.length, CAP, `round ${round}: ${started.length} started`);
        assert.ok(
          refused.every((r) => /running-task cap reached/.test(r.error!.message)),
          JSON.stringify(refused[0]),
        );
        assert.deepEqual(await running(t.id), { counted: CAP, actual: CAP });
        await Promise.all(started.map((id, i) => on(replicas[(i + 1) % 3], t).cancel(id)));
        await until('the cancels to be counted', async () => (await running(t.id)).counted === 0);
        assert.deepEqual(await running(t.id), { counted: 0, actual: 0 });
      }
    });

    it('a continuation of a task waiting for input counts against the cap: refused at it, taken under it', async () => {
      const t = await newTenant(replicas[0], 'continuing');
      await replicas[0].admin.patch(`/v1/admin/tenants/${t.id}/limits`, { max_running_tasks: 2, sends_per_minute: 0 });
      const asked = await on(replicas[0], t).send('ask');
      assert.equal(asked.result?.task?.status?.state, 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked));
      const taskId = asked.result.task.id as string;
      const holds = [await on(replicas[1], t).send('hold', HELD), await on(replicas[2], t).send('hold', HELD)].map(
        (r) => r.result.task.id as string,
      );
      const atCap = await on(replicas[2], t).send('go on', { taskId, ...HELD });
      assert.match(atCap.error?.message ?? '', /running-task cap reached/, JSON.stringify(atCap));
      assert.deepEqual(await running(t.id), { counted: 2, actual: 2 });
      await on(replicas[0], t).cancel(holds[0]);
      await until('the cancel to be counted', async () => (await running(t.id)).counted === 1);
      const taken = await on(replicas[2], t).send('go on', { taskId });
      assert.equal(taken.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(taken));
    });

    it('the send rate: 60 racing sends over three replicas admit exactly 20 a minute', async () => {
      await inOneQuotaWindow(async () => {
        const t = await newTenant(replicas[0], 'rated');
        await replicas[0].admin.patch(`/v1/admin/tenants/${t.id}/limits`, {
          sends_per_minute: 20,
          max_running_tasks: 0,
        });
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) => on(replicas[i % 3], t).send(`n${i}`, HELD)),
        );
        assert.equal(results.filter((r) => r.result).length, 20, 'the limit, exactly');
        assert.ok(results.filter((r) => r.error).every((r) => /send quota/.test(r.error!.message)));
      });
    });
  },
);
