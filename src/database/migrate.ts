import type { DataSource, Migration } from 'typeorm';

// Any constant shared by every replica; serialises concurrent migration runs.
const MIGRATION_LOCK_KEY = 0x41524249; // "ARBI"

/**
 * Runs pending migrations. On a real server an advisory lock makes replicas
 * that start together take turns; the embedded database has one process.
 */
export async function runMigrations(ds: DataSource, embedded: boolean): Promise<Migration[]> {
  if (embedded) return ds.runMigrations({ transaction: 'each' });
  const runner = ds.createQueryRunner();
  try {
    await runner.connect();
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      return await ds.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
