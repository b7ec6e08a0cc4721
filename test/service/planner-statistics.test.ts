import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { QueryRunner } from 'typeorm';
import { PlannerStatistics } from '../../src/database/planner-statistics.service.js';
import { APPEND, appendRecord } from '../../src/tasks/statements/append.sql.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine } from '../helpers/engine.js';

/**
 * A prepared statement's generic plan, made while the task table was small, reads the whole table for an append
 * to one task, and keeps doing so as the table grows — until the table's statistics are gathered again, which
 * the replica does itself once the table has doubled.
 */
describe(`planner statistics (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let stats: PlannerStatistics;
  let runner: QueryRunner;
  let tenant: string;
  before(async () => {
    engine = await startEngine();
    stats = engine.app.get(PlannerStatistics);
    // The test runs the checks itself: the periodic one is stopped.
    await stats.beforeApplicationShutdown();
    tenant = await engine.newTenant();
    runner = engine.ds.createQueryRunner();
    await runner.connect();
  });
  after(async () => {
    await runner.query('DEALLOCATE ALL').catch(() => undefined);
    await runner.release();
    await engine.close();
  });

  /**
   * The replica's check, on a connection of the pool: the embedded database has one session, held by the
   * test's runner until it is released (the session, and the statement prepared in it, stay).
   */
  const check = async (): Promise<string[]> => {
    if (REAL_POSTGRES) return stats.check();
    await runner.release();
    try {
      return await stats.check();
    } finally {
      runner = engine.ds.createQueryRunner();
      await runner.connect();
    }
  };

  const addTasks = (from: number, to: number) =>
    runner.query(
      `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, last_seq)
       SELECT 'task-' || i, $1, 'index', 'ctx-' || i, 'TASK_STATE_WORKING', now(), 1
         FROM generate_series($2::int, $3::int) AS i`,
      [tenant, from, to],
    );

  /** The plan of the task append for one task, as the prepared statement's generic plan has it now. */
  const appendPlan = async (): Promise<string> => {
    const record = appendRecord(0, 'task-3', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } }], {});
    const literal = JSON.stringify([record]).replaceAll("'", "''");
    const rows = (await runner.query(`EXPLAIN EXECUTE append_probe('${literal}', 'probe-replica')`)) as {
      'QUERY PLAN': string;
    }[];
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  };

  it('replaces a plan that scans the whole task table once the table has outgrown its statistics', async () => {
    // A fresh database: a few tasks, their statistics gathered; the append prepared and planned for good.
    // (Autovacuum, where the server runs it, would analyze the table too, on its own time: not for this table here.)
    await runner.query('ALTER TABLE a2a_tasks SET (autovacuum_enabled = false)');
    await addTasks(1, 10);
    await runner.query('ANALYZE a2a_tasks');
    await runner.query('SET plan_cache_mode = force_generic_plan');
    await runner.query(`PREPARE append_probe AS ${APPEND.text}`);
    assert.match(await appendPlan(), /Seq Scan on a2a_tasks/, 'a small table is read whole');
    assert.deepEqual(await check(), [], 'nothing has outgrown its statistics yet');

    // The table grows; the plan stays what it was.
    await addTasks(11, 5_000);
    assert.match(await appendPlan(), /Seq Scan on a2a_tasks/, 'the plan made for a small table is kept');

    const analyzed = await check();
    assert.ok(analyzed.includes('a2a_tasks'), `the task table is analyzed: ${analyzed.join(', ')}`);
    const plan = await appendPlan();
    assert.doesNotMatch(plan, /Seq Scan on a2a_tasks/, plan);
    assert.match(plan, /Index Scan on "PK_a2a_tasks"|Index Scan using "PK_a2a_tasks"/, plan);
    assert.ok(!(await check()).includes('a2a_tasks'), 'analyzed once per doubling');
  });
});
