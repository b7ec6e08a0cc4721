import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { ENTITIES } from '../../src/entities.js';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { MIGRATIONS } from '../../src/database/migrations/index.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { tempHome } from '../helpers/server.js';
import { spawnSync } from 'node:child_process';

const TABLES = [
  'a2a_tasks',
  'agent_budgets',
  'agents',
  'audit_log',
  'budget_thresholds',
  'conversations',
  'memory_entries',
  'migrations',
  'operator_tokens',
  'push_configs',
  'rate_windows',
  'replica_usage',
  'stats_a2a_errors',
  'stats_latency',
  'stats_tasks',
  'task_events',
  'task_files',
  'tenant_registry_entries',
  'tenant_running',
  'tenant_tokens',
  'tenants',
  'trusted_issuers',
  'usage_daily',
  'usage_hourly',
  'usage_ledger',
  'usage_requests',
];

describe(`migrations (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let db: TestDatabase;
  let home: string;
  let ds: DataSource;
  before(async () => {
    db = await freshDatabase();
    home = tempHome();
    const config = loadConfig({ ARBITER_HOME: home, ...(db.url ? { DATABASE_URL: db.url } : {}) });
    ds = new DataSource(dataSourceOptions(config, ENTITIES));
    await ds.initialize();
  });
  after(async () => {
    await ds.destroy();
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  const tables = async (): Promise<string[]> =>
    (
      await ds.query<{ table_name: string }[]>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
      )
    ).map((r) => r.table_name);

  it('runs every migration on an empty database', async () => {
    assert.deepEqual(await tables(), []);
    const applied = await runMigrations(ds, !REAL_POSTGRES);
    assert.deepEqual(
      applied.map((m) => m.name),
      MIGRATIONS.map((m) => m.name),
    );
    assert.deepEqual(await tables(), TABLES);
  });

  it('is a no-op the second time', async () => {
    const applied = await runMigrations(ds, !REAL_POSTGRES);
    assert.deepEqual(applied, []);
    assert.equal(await ds.showMigrations(), false);
  });

  it('leaves a schema that matches the entities exactly', async () => {
    const pending = await ds.driver.createSchemaBuilder().log();
    assert.deepEqual(
      pending.upQueries.map((q) => q.query),
      [],
      'entities and migrations disagree; generate a migration',
    );
  });

  it('enforces agent ids in the database too', async () => {
    await ds.query(`INSERT INTO tenants (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 't')`);
    for (const id of ['index', 'has space', '']) {
      await assert.rejects(
        ds.query(
          `INSERT INTO agents (tenant_id, id, constitution) VALUES ('00000000-0000-4000-8000-000000000001', $1, '{}')`,
          [id],
        ),
        id,
      );
    }
  });

  it(
    'runs with a pool of one connection (the lock and the migrations share it)',
    { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
    async () => {
      const other = await freshDatabase();
      const config = loadConfig({ ARBITER_HOME: home, DATABASE_URL: other.url!, ARBITER_DB_POOL_SIZE: '1' });
      const single = new DataSource(dataSourceOptions(config, ENTITIES));
      await single.initialize();
      try {
        const applied = await Promise.race([
          runMigrations(single, false),
          new Promise<never>((_, reject) =>
            setTimeout(() => reject(new Error('migrations hung')), PATIENCE_MS).unref(),
          ),
        ]);
        assert.equal(applied.length, MIGRATIONS.length);
      } finally {
        await single.destroy();
        await other.drop();
      }
    },
  );

  it('reverts with down() and re-applies', async () => {
    for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration({ transaction: 'each' });
    assert.deepEqual(await tables(), ['migrations']);
    await runMigrations(ds, !REAL_POSTGRES);
    assert.deepEqual(await tables(), TABLES);
  });

  it('the content sizes of tasks stored before them are filled in', async () => {
    const after = MIGRATIONS.length - MIGRATIONS.findIndex((m) => m.name === 'TaskContentBytes1763850000000');
    for (let i = 0; i < after; i++) await ds.undoLastMigration({ transaction: 'each' });
    await ds.query(`INSERT INTO tenants (id, name) VALUES ('00000000-0000-4000-8000-000000000002', 'sizes')`);
    const history = [{ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x'.repeat(1000) }] }];
    await ds.query(
      `INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, history, artifacts, metadata)
       VALUES ('sized', '00000000-0000-4000-8000-000000000002', 'index', 'c', 'TASK_STATE_COMPLETED', now(), $1, '[]', '{"k":"v"}')`,
      [JSON.stringify(history)],
    );
    await runMigrations(ds, !REAL_POSTGRES);
    const [row] = await ds.query<{ h: string; a: string; e: string }[]>(
      `SELECT history_bytes AS h, artifacts_bytes AS a, extra_bytes AS e FROM a2a_tasks WHERE task_id = 'sized'`,
    );
    assert.ok(Number(row.h) > 1000 && Number(row.h) < 1100, row.h);
    assert.equal(Number(row.a), 2);
    assert.equal(Number(row.e), '{"k": "v"}'.length);
  });

  it('npm run migrate (dist/src/cli/migrate.js) logs JSON lines like the server, and exits 2 on bad settings', () => {
    const cli = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['dist/src/cli/migrate.js'], {
        env: { PATH: process.env.PATH ?? '', ARBITER_HOME: tempHome(), ...env },
        encoding: 'utf8',
      });
    const ok = cli(db.url ? { DATABASE_URL: db.url } : {});
    assert.equal(ok.status, 0, ok.stderr);
    const lines = ok.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; applied?: string[] });
    assert.match(lines.at(-1)!.msg, /^(schema up to date|applied \d+ migration\(s\))$/);
    const bad = cli({ PORT: 'abc' });
    assert.equal(bad.status, 2);
    const line = JSON.parse(bad.stdout.trim()) as { level: number; msg: string };
    assert.equal(line.level, 60);
    assert.match(line.msg, /PORT must be an integer/);
  });
});
