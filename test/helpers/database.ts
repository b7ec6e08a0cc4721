import { randomBytes } from 'node:crypto';
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

export async function freshDatabase(): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  if (!base) return { url: undefined, drop: () => Promise.resolve() };
  // CI sets a per-run prefix so its clean-up never touches another run's databases.
  const prefix = process.env.TEST_DB_PREFIX ?? 'arbiter_t';
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
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
