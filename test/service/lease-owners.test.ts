import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine } from '../helpers/engine.js';
import { PATIENCE_MS } from '../helpers/patience.js';

const LEASE_MS = 1_500;

/**
 * A task is ended "owner lost" only when its lease ran out and its owner is
 * gone: the owner's notice connection (`arbiter:<id>` in pg_stat_activity)
 * absent for a full lease. An owner that is connected keeps its tasks,
 * however late its renewals.
 */
describe(
  'the sweep judges owners by their connection, not only by their leases (PostgreSQL)',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let engine: TestEngine;
    let tenant: string;
    let alive: pg.Client;
    before(async () => {
      engine = await startEngine({ ARBITER_LEASE_MS: String(LEASE_MS) });
      tenant = await engine.newTenant();
      // Another replica's notice connection: connected, but renewing nothing.
      alive = new pg.Client({ connectionString: engine.config.databaseUrl, application_name: 'arbiter:live-replica' });
      await alive.connect();
    });
    after(async () => {
      await alive.end().catch(() => undefined);
      await engine.close();
    });

    const stateOf = async (id: string): Promise<string> =>
      (await engine.ds.query<{ state: string }[]>(`SELECT state FROM a2a_tasks WHERE task_id = $1`, [id]))[0].state;
    const until = async (what: string, cond: () => Promise<boolean>): Promise<void> => {
      const end = Date.now() + PATIENCE_MS;
      while (!(await cond())) {
        assert.ok(Date.now() < end, `waited for ${what}`);
        await sleep(100);
      }
    };

    it('a connected owner keeps its expired tasks; a gone one loses them; once its connection is gone, it loses them too', async () => {
      await engine.ds.query(
        `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, last_seq, owner_instance, lease_expires_at)
       VALUES ('of-live', $1, 'index', 'c', 'TASK_STATE_WORKING', now(), 1, 'live-replica', now() - interval '1 minute'),
              ('of-dead', $1, 'index', 'c', 'TASK_STATE_WORKING', now(), 1, 'dead-replica', now() - interval '1 minute')`,
        [tenant],
      );
      await until('the gone owner’s task to end', async () => (await stateOf('of-dead')) === 'TASK_STATE_FAILED');
      // Sweeps went on for a lease and more: the connected owner's task, though its lease ran out long ago, stands.
      const swept = async () =>
        (
          await engine.ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM task_events WHERE task_id = 'of-dead'`)
        )[0].n;
      assert.equal(await swept(), 1, 'one terminal event');
      await sleep(LEASE_MS * 2);
      assert.equal(await stateOf('of-live'), 'TASK_STATE_WORKING');
      await alive.end();
      await until(
        'the task of the owner whose connection closed to end',
        async () => (await stateOf('of-live')) === 'TASK_STATE_FAILED',
      );
    });
  },
);
