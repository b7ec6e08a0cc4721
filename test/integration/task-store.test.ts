import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { ENTITIES } from '../../src/entities.js';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { InstanceIdentity } from '../../src/tasks/runs/instance-identity.js';
import { TaskRepository } from '../../src/tasks/repositories/task.repository.js';
import { TaskEventRepository } from '../../src/tasks/repositories/task-event.repository.js';
import { foldArtifacts } from '../../src/tasks/task-events.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { tempHome } from '../helpers/server.js';
import { rmSync } from 'node:fs';

const TENANT = '00000000-0000-4000-8000-00000000000a';
const ts = () => new Date().toISOString();

describe(`task store (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let db: TestDatabase;
  let home: string;
  let ds: DataSource;
  let tasks: TaskRepository;
  let repo: TaskEventRepository;
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
    tasks = new TaskRepository(ds, identity);
    repo = new TaskEventRepository(ds, identity);
  });
  after(async () => {
    await ds.destroy();
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const newTask = async (id: string) =>
    tasks.create(
      { taskId: id, messageId: `m-${id}`, tenantId: TENANT, agentId: 'a', contextId: 'c', metadata: {} },
      [{ kind: 'status', payload: { state: 'TASK_STATE_SUBMITTED', timestamp: ts() } }],
      'TASK_STATE_SUBMITTED',
      { owner: 'test', ms: 30_000 },
    );

  it('appends with gap-free seqs, also under concurrent writers', async () => {
    await newTask('t-seq');
    await repo.append('t-seq', [{ kind: 'status', payload: { state: 'TASK_STATE_WORKING', timestamp: ts() } }], {
      state: 'TASK_STATE_WORKING',
    });
    const writes = Array.from({ length: 20 }, (_, i) =>
      repo.append('t-seq', [
        { kind: 'usage', payload: { inputTokens: i, outputTokens: i } },
        { kind: 'usage', payload: { inputTokens: i, outputTokens: i } },
      ]),
    );
    await Promise.all(writes);
    const events = await repo.events(TENANT, 't-seq', 0);
    assert.deepEqual(
      events.map((e) => e.seq),
      Array.from({ length: 42 }, (_, i) => i + 1),
    );
    const row = await tasks.find(TENANT, 't-seq');
    assert.equal(row?.lastSeq, 42);
  });

  it('refuses transitions the state machine forbids, writing nothing', async () => {
    await newTask('t-sm');
    assert.equal(
      await repo.append('t-sm', [{ kind: 'status', payload: { state: 'TASK_STATE_COMPLETED', timestamp: ts() } }], {
        state: 'TASK_STATE_COMPLETED',
      }),
      null,
      'submitted → completed skips working',
    );
    assert.equal((await repo.events(TENANT, 't-sm', 0)).length, 1);
  });

  it('a terminal task never changes: conditional appends refuse, and the database itself refuses', async () => {
    await newTask('t-term');
    await repo.append('t-term', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
      state: 'TASK_STATE_CANCELED',
    });
    // Exactly once: a second cancel (or a late completion) writes nothing.
    assert.equal(
      await repo.append('t-term', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
        state: 'TASK_STATE_CANCELED',
      }),
      null,
    );
    assert.equal(await repo.append('t-term', [{ kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } }]), null);
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
    await repo.append('t-old-done', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
      state: 'TASK_STATE_CANCELED',
    });
    await newTask('t-old-running');
    await newTask('t-new-done');
    await repo.append('t-new-done', [{ kind: 'status', payload: { state: 'TASK_STATE_CANCELED', timestamp: ts() } }], {
      state: 'TASK_STATE_CANCELED',
    });
    await ds.query(
      `UPDATE a2a_tasks SET updated_at = now() - interval '40 days' WHERE task_id IN ('t-old-done', 't-old-running')`,
    );
    assert.equal(await tasks.purgeEnded(30, 1), 1);
    assert.equal(await tasks.purgeEnded(30, 1), 0);
    assert.equal(await tasks.find(TENANT, 't-old-done'), null);
    assert.deepEqual(await repo.events(TENANT, 't-old-done', 0), []);
    assert.ok(await tasks.find(TENANT, 't-old-running'), 'a running task is never purged');
    assert.ok(await tasks.find(TENANT, 't-new-done'));
  });

  it('another tenant cannot read a task', async () => {
    assert.equal(await tasks.find('00000000-0000-4000-8000-00000000000b', 't-seq'), null);
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
});
