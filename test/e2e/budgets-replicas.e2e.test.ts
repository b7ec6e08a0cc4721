// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { a2a, waitFor } from '../helpers/a2a.js';
import { BudgetThresholds } from '../../src/budgets/budget-thresholds.service.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { newAgent, newTenant } from '../helpers/factories.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Tokens of every model call of the scripted model. */
const PER_CALL = 1000;
const LIMIT = 10_000;
/** Runs racing at once, half on each replica; each would make six calls (36 000 tokens in all) without the budget. */
const RUNS = 6;
const MESSAGE = /^budget exhausted for tenant budget-race \(tokens this month: (\d+) of 10000\)$/;

/**
 * One tenant budget, two replicas on one PostgreSQL, runs racing on both:
 * every model call checks the spend committed so far before it starts, so
 * the spend overshoots the limit by at most the calls in flight when it was
 * reached — one per running run here — and every run after that is refused.
 */
describe(
  'budgets across two replicas on one PostgreSQL',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let fake: FakeProvider;
    let replicas: TestServer[];
    let sql: pg.Client;
    before(async () => {
      db = await freshDatabase();
      fake = new FakeProvider();
      await fake.start();
      // Never done: every reply asks for a command, so each run calls the model again, up to six times.
      fake.scripts.set('race-looper', () => ({
        text: 'Working.\n/mem list\n',
        usage: { input: PER_CALL - 100, output: 100 },
      }));
      const env = { OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_API_KEY: 'sk-test-race-0001' };
      replicas = [await startTestServer({ env, db }), await startTestServer({ env, db })];
      sql = new pg.Client({ connectionString: db.url });
      await sql.connect();
    });
    after(async () => {
      await sql?.end();
      for (const r of replicas ?? []) await r.close();
      await fake?.stop();
      await db?.drop();
    });

    it('without a prices file, a cost budget is refused naming the field', async () => {
      const t = await newTenant(replicas[0], 'budget-no-prices');
      const res = await replicas[0].admin.patch(`/v1/admin/tenants/${t.id}/limits`, { cost_per_month: 10 });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.details[0].field, 'cost_per_month');
      assert.match(res.body.details[0].messages[0], /prices file/);
    });

    it(`spend ≤ limit + runs in flight × tokens per call, and every run after exhaustion is refused`, async () => {
      const t = await newTenant(replicas[0], 'budget-race');
      await newAgent(t, { id: 'looper', model: 'openai/race-looper' });
      // Set on one replica: in force on both when it answers.
      const set = await replicas[0].admin.patch(`/v1/admin/tenants/${t.id}/limits`, { tokens_per_month: LIMIT });
      assert.equal(set.status, 200, set.text);
      const results = await Promise.all(
        Array.from({ length: RUNS }, (_, i) => a2a(replicas[i % 2].url, t.token, 'looper').send(`go ${i}`)),
      );
      const { rows } = await sql.query<{ tokens: string; calls: string }>(
        `SELECT sum(input_tokens + output_tokens) AS tokens, count(*) AS calls FROM usage_ledger WHERE tenant_id = $1`,
        [t.id],
      );
      const spent = Number(rows[0].tokens);
      assert.ok(spent >= LIMIT, `the budget was reached (${spent})`);
      assert.ok(spent <= LIMIT + RUNS * PER_CALL, `spent ${spent} > ${LIMIT} + ${RUNS} × ${PER_CALL}`);
      let failed = 0;
      for (const r of results) {
        const task: any = r.result?.task;
        // A run refused before it started (all spent already), or one that ran and was stopped between calls.
        if (!task) {
          assert.equal(r.error?.code, -32000, JSON.stringify(r));
          assert.match(r.error.message, MESSAGE);
          continue;
        }
        assert.equal(task.status.state, 'TASK_STATE_FAILED', JSON.stringify(task.status));
        assert.match(task.status.message.parts[0].text, MESSAGE);
        failed++;
      }
      assert.ok(failed >= 1, 'at least one run was stopped between model calls');
      // After exhaustion, on both replicas and either dialect: refused before anything starts.
      for (const r of replicas) {
        const refused = await a2a(r.url, t.token, 'looper').send('again');
        assert.equal(refused.error?.code, -32000, JSON.stringify(refused));
        assert.match(refused.error.message, MESSAGE);
        assert.equal(Number(refused.error.message.match(MESSAGE)![1]), spent);
      }
      const after = await sql.query<{ tokens: string }>(
        `SELECT sum(input_tokens + output_tokens) AS tokens FROM usage_ledger WHERE tenant_id = $1`,
        [t.id],
      );
      assert.equal(Number(after.rows[0].tokens), spent, 'nothing was spent after exhaustion');
      // The threshold, crossed on both replicas, was recorded once, cluster-wide.
      const count = async (): Promise<number> =>
        (
          await sql.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND action = 'budget.threshold'`,
            [t.id],
          )
        ).rows[0].n;
      await waitFor(async () => ((await count()) > 0 ? true : undefined));
      for (const r of replicas) await r.running.app.get(BudgetThresholds).idle();
      assert.equal(await count(), 1);
    });
  },
);
