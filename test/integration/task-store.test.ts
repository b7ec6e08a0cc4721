import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { ENTITIES } from '../../src/entities.js';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { InstanceIdentity } from '../../src/database/instance-identity.js';
import { TaskReads } from '../../src/tasks/repositories/task-reads.repository.js';
import { EventReads } from '../../src/tasks/repositories/event-reads.repository.js';
import { Metrics } from '../../src/metrics/metrics.service.js';
import { TaskLogWriter } from '../../src/tasks/repositories/task-log.writer.js';
import { Sql } from '../../src/database/sql.service.js';
import { ArtifactFold, foldArtifacts } from '../../src/tasks/task-events.js';
import type { ArtifactJson } from '../../src/common/a2a-json.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { tempHome } from '../helpers/server.js';
import { rmSync } from 'node:fs';
import { StatsRecorder } from '../../src/stats/stats-recorder.service.js';
import { UsageMeter } from '../../src/usage/usage-meter.js';

const TENANT = '00000000-0000-4000-8000-00000000000a';
const ts = () => new Date().toISOString();

describe(`task store (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let db: TestDatabase;
  let home: string;
  let ds: DataSource;
  let tasks: TaskReads;
  let repo: EventReads;
  let writes: TaskLogWriter;
  before(async () => {
    db = await freshDatabase();
    home = tempHome();
    ds = new DataSource(
      dataSourceOptions(loadConfig({ ARBITER_HOME: home, ...(db.url ? { DATABASE_URL: db.url } : {}) }), ENTITIES),
    );
    await ds.initialize();
    await runMigrations(ds, !REAL_POSTGRES);
    await ds.query(`INSERT INTO tenants (id, name) VALUES ($1, 't')`, [TENANT]);
    const identity = new InstanceIdentity();
    const sql = new Sql(ds);
    tasks = new TaskReads(ds, sql);
    repo = new EventReads(ds, sql);
    const metrics = new Metrics();
    writes = new TaskLogWriter(ds, sql, identity, metrics, repo, new UsageMeter(metrics), new StatsRecorder(ds));
  });
  after(async () => {
    await ds.destroy();
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  /** The events stored for a task id, read from the table itself (not through its task). */
  const storedEvents = async (id: string): Promise<number> =>
    Number((await ds.query<{ n: string }[]>(`SELECT count(*) AS n FROM task_events WHERE task_id = $1`, [id]))[0].n);

  const newTask = async (id: string) =>
    writes.create(
      {
        taskId: id,
        messageId: `m-${id}`,
        tenantId: TENANT,
        agentId: 'a',
        contextId: 'c',
        metadata: {},
        messageHash: 'h',
      },
      [{ kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } }],
      'TASK_STATE_SUBMITTED',
      { owner: 'test', ms: 30_000 },
    );

  it('appends with gap-free seqs, also under concurrent writers', async () => {
    await newTask('t-seq');
    await writes.append('t-seq', [{ kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: ts() } }], {
      state: 'TASK_STATE_WORKING',
    });
    const concurrent = Array.from({ length: 20 }, (_, i) =>
      writes.append('t-seq', [
        { kind: 'usage', payload: { inputTokens: i, outputTokens: i } },
        { kind: 'usage', payload: { inputTokens: i, outputTokens: i } },
      ]),
    );
    await Promise.all(concurrent);
    const events = await repo.events(TENANT, 't-seq', 0);
    assert.deepEqual(
      events.map((e) => e.seq),
      Array.from({ length: 42 }, (_, i) => i + 1),
    );
    const row = await tasks.find(TENANT, 't-seq');
    assert.equal(row?.lastSeq, 42);
  });

  it('group commit: concurrent writes of many tasks share statements, each caller gets its own part', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `t-gc-${i}`);
    const before = { ...writes.batches };
    const created = await Promise.all(ids.map((id) => newTask(id)));
    assert.deepEqual(
      created.map((evs) => evs.map((e) => [e.taskId, e.seq])),
      ids.map((id) => [[id, 1]]),
    );
    const appended = await Promise.all(
      ids.map((id, i) =>
        writes.append(
          id,
          [
            { kind: 'usage', payload: { inputTokens: i, outputTokens: 0 } },
            { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: ts() } },
          ],
          { state: 'TASK_STATE_WORKING' },
        ),
      ),
    );
    const statements = writes.batches.statements - before.statements;
    assert.equal(writes.batches.writes - before.writes, 80);
    assert.ok(statements < 80 / 4, `80 concurrent writes took ${statements} statements`);
    appended.forEach((r, i) => {
      assert.deepEqual(
        r?.events.map((e) => [e.taskId, e.seq, e.kind]),
        [
          [ids[i], 2, 'usage'],
          [ids[i], 3, 'status'],
        ],
      );
      assert.equal(r?.row?.taskId, ids[i]);
      assert.equal(r?.row?.state, 'TASK_STATE_WORKING');
    });
    for (const [i, id] of ids.entries()) {
      const stored = await repo.events(TENANT, id, 0);
      assert.deepEqual(
        stored.map((e) => e.seq),
        [1, 2, 3],
      );
      assert.equal((stored[1]?.payload as { inputTokens: number }).inputTokens, i);
    }
  });

  it('group commit: writes of one task commit in submission order; a refused item refuses only its caller', async () => {
    await newTask('t-order');
    const results = await Promise.all([
      writes.append('t-order', [{ kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: ts() } }], {
        state: 'TASK_STATE_WORKING',
      }),
      writes.append('t-order', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } }]),
      writes.append('t-order', [{ kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', timestamp: ts() } }], {
        state: 'TASK_STATE_COMPLETED',
      }),
      writes.append('t-order', [{ kind: 'usage', payload: { inputTokens: 2, outputTokens: 2 } }]),
      writes.append('t-missing', [{ kind: 'usage', payload: { inputTokens: 2, outputTokens: 2 } }]),
    ]);
    assert.deepEqual(
      results.map((r) => r?.events.map((e) => e.seq) ?? null),
      [[2], [3], [4], null, null],
    );
    assert.equal(results[2]?.row?.state, 'TASK_STATE_COMPLETED');
  });

  it('group commit: a batch with a failing row is split, and only that caller fails', async () => {
    await newTask('t-dup-a');
    const [dup, ...fresh] = await Promise.allSettled([
      // the same messageId again: the unique index refuses this row
      writes.create(
        {
          taskId: 't-dup-b',
          messageId: 'm-t-dup-a',
          tenantId: TENANT,
          agentId: 'a',
          contextId: 'c',
          metadata: {},
          messageHash: 'h',
        },
        [{ kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } }],
        'TASK_STATE_SUBMITTED',
        { owner: 'test', ms: 30_000 },
      ),
      newTask('t-split-1'),
      newTask('t-split-2'),
    ]);
    assert.equal(dup?.status, 'rejected');
    assert.equal((dup.reason as { code?: string }).code, '23505');
    assert.deepEqual(
      fresh.map((r) => r.status),
      ['fulfilled', 'fulfilled'],
    );
    assert.ok(await tasks.find(TENANT, 't-split-2'));
    assert.equal(await tasks.find(TENANT, 't-dup-b'), null);
  });

  const xmins = async (id: string): Promise<{ row: string; events: string[] }> => {
    const [row] = await ds.query<{ x: string }[]>(`SELECT xmin::text AS x FROM a2a_tasks WHERE task_id = $1`, [id]);
    const events = await ds.query<{ x: string }[]>(
      `SELECT DISTINCT xmin::text AS x FROM task_events WHERE task_id = $1`,
      [id],
    );
    return { row: row?.x ?? '', events: events.map((e) => e.x) };
  };
  const creating = (id: string, messageId = `m-${id}`) =>
    writes.create(
      { taskId: id, messageId, tenantId: TENANT, agentId: 'a', contextId: 'c', metadata: { k: 1 }, messageHash: 'h' },
      [
        { kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } },
        {
          kind: 'message',
          payload: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }], taskId: id, contextId: 'c' } },
        },
        { kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: ts() } },
      ],
      'TASK_STATE_WORKING',
      { owner: 'test', ms: 30_000 },
    );

  it('appends made while a creation waits for its statement are written by it, in order, each answered as its own', async () => {
    const before = { ...writes.batches };
    const reply = { messageId: 'r1', role: 'ROLE_AGENT' as const, parts: [{ text: 'hello back' }] };
    const artifact = { artifactId: 'a1', name: 'response', parts: [{ text: 'hello back' }] };
    const created = creating('t-merge');
    const results = await Promise.all([
      created,
      writes.append('t-merge', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 2 } }]),
      // A transition the state machine forbids (working → submitted): refused, writes nothing.
      writes.append('t-merge', [{ kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } }], {
        state: 'TASK_STATE_SUBMITTED',
      }),
      // A settle that took input 2, the task's only message: applies.
      writes.append(
        't-merge',
        [
          { kind: 'artifact', payload: { artifact, append: false, lastChunk: true } },
          { kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', message: reply, timestamp: ts() } },
        ],
        {
          state: 'TASK_STATE_COMPLETED',
          lease: null,
          statusMessage: reply,
          historyAppend: [reply],
          artifacts: [artifact],
          tokens: { input: 1, output: 2 },
          inputsUpTo: 2,
        },
      ),
      // After a terminal state nothing more is taken.
      writes.append('t-merge', [{ kind: 'usage', payload: { inputTokens: 9, outputTokens: 9 } }]),
    ]);
    const [first, usage, forbidden, settled, late] = results as [
      Awaited<typeof created>,
      ...(Awaited<ReturnType<typeof writes.append>> | undefined)[],
    ];
    assert.equal(writes.batches.statements - before.statements, 1, 'one statement');
    assert.deepEqual(
      first.map((e) => e.seq),
      [1, 2, 3],
    );
    assert.deepEqual(
      usage?.events.map((e) => [e.seq, e.kind]),
      [[4, 'usage']],
    );
    assert.equal(usage?.row, undefined);
    assert.equal(forbidden, null);
    assert.deepEqual(
      settled?.events.map((e) => [e.seq, e.kind]),
      [
        [5, 'artifact'],
        [6, 'status'],
      ],
    );
    assert.equal(late, null);
    // The row the settling append was answered with is the row stored.
    const row = await tasks.find(TENANT, 't-merge');
    assert.ok(row && settled?.row);
    assert.equal(row.state, 'TASK_STATE_COMPLETED');
    assert.equal(row.lastSeq, 6);
    assert.deepEqual(settled.row, row);
    const [lease] = await ds.query<{ owner: string | null; until: Date | null }[]>(
      `SELECT owner_instance AS owner, lease_expires_at AS until FROM a2a_tasks WHERE task_id = 't-merge'`,
    );
    assert.deepEqual(lease, { owner: null, until: null });
    assert.deepEqual(
      (await repo.events(TENANT, 't-merge', 0)).map((e) => [e.seq, e.kind]),
      [
        [1, 'status'],
        [2, 'message'],
        [3, 'status'],
        [4, 'usage'],
        [5, 'artifact'],
        [6, 'status'],
      ],
    );
    const { row: rowTx, events: eventTx } = await xmins('t-merge');
    assert.deepEqual(eventTx, [rowTx], 'one transaction wrote the row and every event');
  });

  it('an append made once the creation statement was sent follows it after it has committed', async () => {
    const created = creating('t-follow');
    // The statement is built on the next macrotask.
    await new Promise((r) => setImmediate(r));
    const appended = await writes.append(
      't-follow',
      [{ kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', timestamp: ts() } }],
      { state: 'TASK_STATE_COMPLETED', lease: null },
    );
    assert.deepEqual(
      (await created).map((e) => e.seq),
      [1, 2, 3],
    );
    assert.deepEqual(
      appended?.events.map((e) => e.seq),
      [4],
    );
    const { row, events } = await xmins('t-follow');
    assert.equal(events.length, 2, 'the creation, then the append');
    assert.ok(events.includes(row), 'the row was last written by the append');
  });

  it('a creation that fails writes none of the appends merged into it', async () => {
    await creating('t-first', 'm-taken');
    const dup = creating('t-second', 'm-taken');
    const merged = writes.append('t-second', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } }], {});
    await assert.rejects(dup, (err: { code?: string }) => err.code === '23505');
    assert.equal(await merged, null);
    assert.equal(await tasks.find(TENANT, 't-second'), null);
    assert.deepEqual(await repo.events(TENANT, 't-second', 0), []);
  });

  it('refuses transitions the state machine forbids, writing nothing', async () => {
    await newTask('t-sm');
    assert.equal(
      await writes.append('t-sm', [{ kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', timestamp: ts() } }], {
        state: 'TASK_STATE_COMPLETED',
      }),
      null,
      'submitted → completed skips working',
    );
    assert.equal((await repo.events(TENANT, 't-sm', 0)).length, 1);
  });

  it('a terminal task never changes: conditional appends refuse, and the database itself refuses', async () => {
    await newTask('t-term');
    await writes.append('t-term', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
      state: 'TASK_STATE_CANCELED',
    });
    // Exactly once: a second cancel (or a late completion) writes nothing.
    assert.equal(
      await writes.append('t-term', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
        state: 'TASK_STATE_CANCELED',
      }),
      null,
    );
    assert.equal(
      await writes.append('t-term', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } }]),
      null,
    );
    await assert.rejects(
      ds.query(`UPDATE a2a_tasks SET state = 'TASK_STATE_WORKING' WHERE task_id = 't-term'`),
      /terminal/,
    );
    await assert.rejects(
      ds.query(`UPDATE a2a_tasks SET history = '[]'::jsonb || history || '[{}]'::jsonb WHERE task_id = 't-term'`),
      /terminal/,
    );
    const row = await tasks.find(TENANT, 't-term');
    assert.equal(row?.state, 'TASK_STATE_CANCELED');
    assert.equal(row?.lastSeq, 2);
  });

  it('retention deletes tasks that ended long ago, with their events, and nothing else', async () => {
    await newTask('t-old-done');
    await writes.append(
      't-old-done',
      [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }],
      {
        state: 'TASK_STATE_CANCELED',
      },
    );
    await newTask('t-old-running');
    await newTask('t-new-done');
    await writes.append(
      't-new-done',
      [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }],
      {
        state: 'TASK_STATE_CANCELED',
      },
    );
    await ds.query(
      `UPDATE a2a_tasks SET updated_at = now() - interval '40 days' WHERE task_id IN ('t-old-done', 't-old-running')`,
    );
    assert.equal(await writes.purgeEnded(30, 1), 1);
    assert.equal(await writes.purgeEnded(30, 1), 0);
    assert.equal(await tasks.find(TENANT, 't-old-done'), null);
    assert.deepEqual(await repo.events(TENANT, 't-old-done', 0), []);
    assert.equal(await storedEvents('t-old-done'), 0, 'its events are deleted with it');
    assert.ok(await tasks.find(TENANT, 't-old-running'), 'a running task is never purged');
    assert.ok(await tasks.find(TENANT, 't-new-done'));
    assert.equal(await storedEvents('t-new-done'), 2);
  });

  it('a task’s events go with it, however it is deleted: with its context, or with its tenant', async () => {
    const other = '00000000-0000-4000-8000-00000000000c';
    await ds.query(`INSERT INTO tenants (id, name) VALUES ($1, 'other')`, [other]);
    const ended = { kind: 'status' as const, payload: { state: 'TASK_STATE_CANCELED' as const, timestamp: ts() } };
    for (const id of ['t-ctx-1', 't-ctx-2', 't-ten-1', 't-ten-2']) {
      const tenantId = id.startsWith('t-ten') ? other : TENANT;
      await writes.create(
        {
          taskId: id,
          messageId: `m-${id}`,
          tenantId,
          agentId: 'a',
          contextId: id.slice(0, 5),
          metadata: {},
          messageHash: 'h',
        },
        [{ kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } }],
        'TASK_STATE_SUBMITTED',
        { owner: 'test', ms: 30_000 },
      );
      await writes.append(id, [ended], { state: 'TASK_STATE_CANCELED' });
      assert.equal(await storedEvents(id), 2);
    }
    assert.equal(await writes.deleteEndedInContext(TENANT, 'a', 't-ctx'), 2);
    assert.equal((await storedEvents('t-ctx-1')) + (await storedEvents('t-ctx-2')), 0);
    // The tenant's deletion cascades to its tasks, and their deletion to their events.
    await ds.query(`DELETE FROM tenants WHERE id = $1`, [other]);
    assert.equal((await storedEvents('t-ten-1')) + (await storedEvents('t-ten-2')), 0);
    assert.ok((await storedEvents('t-new-done')) > 0, 'another task keeps its events');
  });

  it('another tenant cannot read a task', async () => {
    assert.equal(await tasks.find('00000000-0000-4000-8000-00000000000b', 't-seq'), null);
  });

  it('lookups made together are answered by one query, each with its own task or none', async () => {
    const other = '00000000-0000-4000-8000-00000000000d';
    await ds.query(`INSERT INTO tenants (id, name) VALUES ($1, 'reader')`, [other]);
    const ids = ['t-read-1', 't-read-2', 't-read-3'];
    for (const id of ids) await newTask(id);
    const queries: string[] = [];
    const logged = (ds.driver as unknown as { master: { query: (...a: unknown[]) => Promise<unknown> } }).master;
    const query = logged.query.bind(logged);
    logged.query = (config: unknown, ...rest: unknown[]) => {
      const name = (config as { name?: string }).name;
      if (name?.startsWith('arbiter_task_find')) queries.push(name);
      return query(config, ...rest);
    };
    try {
      const rows = await Promise.all([
        tasks.find(TENANT, 't-read-2'),
        tasks.find(other, 't-read-1'), // another tenant's task: none
        tasks.find(TENANT, 't-read-missing'),
        tasks.find(TENANT, 't-read-1'),
        tasks.find(TENANT, 't-read-2'), // the same task twice
        tasks.find(TENANT, 't-read-3'),
      ]);
      assert.deepEqual(
        rows.map((r) => r?.taskId ?? null),
        ['t-read-2', null, null, 't-read-1', 't-read-2', 't-read-3'],
      );
      assert.deepEqual(queries, ['arbiter_task_find_many']);
      // Each row is a task row as a lookup alone reads it (no column of the batch's own).
      const alone = await tasks.find(TENANT, 't-read-1');
      assert.deepEqual(rows[3], alone);
      assert.deepEqual(Object.keys(rows[3] ?? {}), Object.keys(alone ?? {}));
      assert.deepEqual(queries, ['arbiter_task_find_many', 'arbiter_task_find']);
    } finally {
      logged.query = query;
    }
  });
});

describe('artifact folding', () => {
  it('appends text chunks into one part and replaces on append: false', () => {
    const a = (text: string, append: boolean) => ({
      kind: 'artifact' as const,
      payload: { artifact: { artifactId: 'x', name: 'response', parts: [{ text }] }, append, lastChunk: false },
    });
    const folded = foldArtifacts([], [a('he', false), a('llo', true), a('', true)]);
    assert.deepEqual(folded, [{ artifactId: 'x', name: 'response', parts: [{ text: 'hello' }] }]);
    assert.deepEqual(foldArtifacts(folded, [a('new', false)])[0]?.parts, [{ text: 'new' }]);
  });

  it('an incremental fold lists what folding all at once gives, and later events leave a listed copy alone', () => {
    const ev = (id: string, parts: ArtifactJson['parts'], append: boolean) => ({
      kind: 'artifact' as const,
      payload: { artifact: { artifactId: id, parts }, append, lastChunk: false },
    });
    const base: ArtifactJson[] = [{ artifactId: 'b', parts: [{ text: 'base' }] }];
    const events = [
      ev('r', [{ text: 'he' }], false),
      ev('b', [{ text: '+more' }], true),
      ev('r', [{ text: 'llo' }], true),
      ev('f', [{ data: { k: 1 } }], false),
      ev('r', [{ text: ' world', metadata: { m: 1 } }], true),
      ev('r', [{ text: '' }], true),
      ev('f', [{ data: { k: 2 } }], false),
    ];
    const fold = new ArtifactFold(base);
    const seen: ArtifactJson[][] = [];
    for (const [i, e] of events.entries()) {
      fold.add(e);
      seen.push(fold.list());
      assert.deepEqual(seen[i], foldArtifacts(base, events.slice(0, i + 1)), `after event ${i}`);
    }
    // A list taken earlier is a snapshot: the appends after it did not change it, nor the base.
    assert.deepEqual(seen[2]?.find((x) => x.artifactId === 'r')?.parts, [{ text: 'hello' }]);
    assert.deepEqual(base, [{ artifactId: 'b', parts: [{ text: 'base' }] }]);
  });
});
