import pg from 'pg';
import type { AppConfig } from '../config/app-config.js';
import { redactUrl } from '../config/app-config.js';

/** A start-up failure whose cause is known and whose message says what to do: logged in one line, no stack. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/**
 * Before anything else starts (and before an admin token is created), checks
 * that the PostgreSQL server at `DATABASE_URL` answers and the database
 * exists, so a wrong URL is one clear line instead of a framework's retries.
 * The embedded database needs no check.
 */
export async function checkDatabase(config: AppConfig): Promise<void> {
  if (!config.databaseUrl) return;
  const url = new URL(config.databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, '')) || url.username || 'postgres';
  const client = new pg.Client({ connectionString: config.databaseUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    const e = err as { code?: string; message?: string };
    const where = redactUrl(config.databaseUrl);
    if (e.code === '3D000') {
      throw new StartupError(
        `database "${name}" does not exist on ${url.host}; create it (createdb "${name}", or CREATE DATABASE "${name}") ` +
          `or point DATABASE_URL at one that does`,
      );
    }
    if (e.code === '28P01' || e.code === '28000') {
      throw new StartupError(`PostgreSQL at ${url.host} refused the credentials in DATABASE_URL (${where})`);
    }
    throw new StartupError(
      `cannot reach PostgreSQL at ${url.host} (DATABASE_URL=${where}): ${e.code ?? ''} ${e.message ?? String(err)}`.replace(
        /\s+/g,
        ' ',
      ),
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
