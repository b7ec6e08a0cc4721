import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A database of its own for one test file. With `DATABASE_URL` set (CI's
 * real PostgreSQL run) a fresh database is created on that server and
 * dropped afterwards; without it the app uses embedded PGlite in the test's
 * own `ARBITER_HOME`.
 */
export interface TestDatabase {
  url: string | undefined;
  drop(): Promise<void>;
}

export const REAL_POSTGRES = Boolean(process.env.DATABASE_URL);

/** How the databases this process makes begin: `arbiter_t_<pid>_` (CI sets a per-run prefix, so its clean-up never touches another run's). */
export function ownDatabasePrefix(): string {
  return `${process.env.TEST_DB_PREFIX ?? 'arbiter_t'}_${process.pid}_`;
}

export async function freshDatabase(): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  if (!base) return { url: undefined, drop: () => Promise.resolve() };
  const name = `${ownDatabasePrefix()}${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * Without `DATABASE_URL` every test server starts on an embedded database of
 * its own, and creating one (initdb inside PGlite, then every migration)
 * costs seconds of CPU per server. `scripts/run-tests.mjs` therefore builds
 * one migrated data directory per run (`pgdata-template.ts`) and names it in
 * this variable; a test's home gets a copy (a closed data directory is plain
 * files, and the copy is that test's alone). Without the variable — a file
 * run on its own with `node --test` — each server creates its database as in
 * production. Migrating an empty database is still tested for real: by
 * `test/integration/migrations.test.ts` and by the first start in
 * `test/e2e/process.e2e.test.ts`, which never take the copy.
 */
export const PGDATA_TEMPLATE_ENV = 'ARBITER_TEST_PGDATA_TEMPLATE';

/** Gives `home` a copy of the run's migrated embedded database, unless it has one already or there is none to copy. */
export function seedEmbeddedDatabase(home: string): void {
  const template = process.env[PGDATA_TEMPLATE_ENV];
  const target = join(home, 'pgdata');
  if (REAL_POSTGRES || !template || !existsSync(template) || existsSync(target)) return;
  mkdirSync(home, { recursive: true });
  cpSync(template, target, { recursive: true });
}
