import { MigrationExecutor, type DataSource, type Migration } from 'typeorm';

// Any constant shared by every replica; serialises concurrent migration runs.
const MIGRATION_LOCK_KEY = 0x41524249; // "ARBI"

/**
 * Runs pending migrations, each in its own transaction, on one connection.
 * On a real server that connection first takes an advisory lock, so replicas
 * that start together take turns; running on the same connection means a
 * pool of one cannot deadlock on it. The embedded database has one process.
 */
export async function runMigrations(ds: DataSource, embedded: boolean): Promise<Migration[]> {
  const runner = ds.createQueryRunner();
  try {
    await runner.connect();
    if (!embedded) await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const executor = new MigrationExecutor(ds, runner);
      executor.transaction = 'each';
      return await executor.executePendingMigrations();
    } finally {
      if (!embedded) await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
