import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LeaseService } from '../../src/tasks/runs/lease.service.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine } from '../helpers/engine.js';

const ORPHANS = 10_000;

/** The orphan sweep ends every orphan in one pass, in batches, with its artifacts folded from the log. */
describe(`lease sweep (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let tenant: string;
  before(async () => {
    // A long lease: the sweep runs only when the test calls it.
    engine = await startEngine({ ARBITER_LEASE_MS: '600000' });
    tenant = await engine.newTenant();
  });
  after(() => engine.close());

  it(`ends ${ORPHANS} orphaned tasks in one sweep, and nothing that is not orphaned`, async () => {
    const { ds } = engine;
    const text = (t: string) => JSON.stringify({ artifactId: 'x', name: 'response', parts: [{ text: t }] });
    await ds.query(
      `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, last_seq, last_input_seq,
                              owner_instance, lease_expires_at)
       SELECT 'orphan-' || i, $1, 'index', 'ctx', 'TASK_STATE_WORKING', now(), 3, 2, 'dead-replica', now() - interval '1 second'
         FROM generate_series(1, $2::int) AS i`,
      [tenant, ORPHANS],
    );
    // A hundred of them streamed text before their owner died: two chunks each.
    await ds.query(
      `UPDATE a2a_tasks SET last_seq = 5 WHERE task_id IN (SELECT 'orphan-' || i FROM generate_series(1, 100) i)`,
    );
    await ds.query(
      `INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT 'orphan-' || i, s.seq, 'artifact',
              jsonb_build_object('artifact', (CASE WHEN s.seq = 4 THEN $1 ELSE $2 END)::jsonb, 'append', s.seq = 5, 'lastChunk', false)
         FROM generate_series(1, 100) i, (VALUES (4), (5)) AS s(seq)`,
      [text('Hello, '), text('world')],
    );
    // Not orphans: a live owner's task, and a task waiting for input (no run, no lease).
    await ds.query(
      `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, last_seq, owner_instance, lease_expires_at)
       VALUES ('alive', $1, 'index', 'ctx', 'TASK_STATE_WORKING', now(), 3, 'live-replica', now() + interval '1 minute'),
              ('waiting', $1, 'index', 'ctx', 'TASK_STATE_INPUT_REQUIRED', now(), 3, NULL, NULL)`,
      [tenant],
    );

    const leases = engine.app.get(LeaseService);
    const started = performance.now();
    const ended = await leases.endOrphans(['dead-replica']);
    const ms = Math.round(performance.now() - started);
    assert.equal(ended, ORPHANS, `one sweep ended them all (${ms} ms)`);

    const states = await ds.query<{ state: string; n: number }[]>(
      `SELECT state, count(*)::int AS n FROM a2a_tasks GROUP BY state ORDER BY state`,
    );
    assert.deepEqual(states, [
      { state: 'TASK_STATE_FAILED', n: ORPHANS },
      { state: 'TASK_STATE_INPUT_REQUIRED', n: 1 },
      { state: 'TASK_STATE_WORKING', n: 1 },
    ]);
    const [ends] = await ds.query<{ n: number; bad: number }[]>(
      `SELECT count(*)::int AS n,
              count(*) FILTER (WHERE e.seq <> t.last_seq OR e.payload->>'state' <> 'TASK_STATE_FAILED'
                                 OR e.payload->>'error' <> 'owner lost' OR t.lease_expires_at IS NOT NULL)::int AS bad
         FROM a2a_tasks t JOIN task_events e ON e.task_id = t.task_id AND e.kind = 'status'
        WHERE t.task_id LIKE 'orphan-%'`,
    );
    assert.deepEqual(ends, { n: ORPHANS, bad: 0 }, 'each got one terminal event, at the end of its log');
    const [folded] = await ds.query<{ artifacts: unknown }[]>(
      `SELECT artifacts FROM a2a_tasks WHERE task_id = 'orphan-7'`,
    );
    assert.deepEqual(folded?.artifacts, [{ artifactId: 'x', name: 'response', parts: [{ text: 'Hello, world' }] }]);
    assert.equal(await leases.endOrphans(['dead-replica']), 0, 'nothing left');
  });
});
