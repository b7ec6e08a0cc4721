import { homedir } from 'node:os';
import { join } from 'node:path';
import { DurationEnv, IntEnv, PatternEnv, TextEnv, UrlEnv } from './setting.decorators.js';

/** Where Arbiter keeps its state, the admin token, and how long tasks are kept. */
export class StorageSettings {
  /**
   * `postgres://` URL of a PostgreSQL server; unset: embedded PGlite in `ARBITER_HOME/pgdata`.
   * @default unset → embedded
   */
  @UrlEnv('DATABASE_URL', 'postgres', { secret: true }) databaseUrl?: string;

  /**
   * State directory: embedded database, `admin_token`, `agents/`.
   * @default `~/.arbiter`
   */
  @TextEnv('ARBITER_HOME', { allowed: 'a directory path' }) home = join(homedir(), '.arbiter');

  /** Connections to a PostgreSQL server (embedded has one session). */
  @IntEnv('ARBITER_DB_POOL_SIZE', 1, 200) dbPoolSize = 10;

  /**
   * The admin token; unset: read from the file, or created (printed once) on first start.
   * @default unset → `ARBITER_HOME/admin_token`
   */
  @PatternEnv(
    'ARBITER_ADMIN_TOKEN',
    /^adm_[A-Za-z0-9_-]{28,}$/,
    'must be "adm_" followed by at least 28 characters from [A-Za-z0-9_-]',
    { secret: true, allowed: '`adm_` + at least 28 characters of `[A-Za-z0-9_-]`' },
  )
  adminToken?: string;

  /**
   * A file holding the admin token (a container secret): read at start, never created, changed or printed; a
   * missing or malformed file stops the start; not together with `ARBITER_ADMIN_TOKEN`.
   */
  @TextEnv('ARBITER_ADMIN_TOKEN_FILE', { allowed: 'a file path' }) adminTokenPath?: string;

  /**
   * A running task's lease: renewed every third of it; a task whose owner is gone (its lease out, its connection
   * absent for a lease) is ended `failed` ("owner lost") by another replica about 1–1.5× this after the owner died.
   */
  @DurationEnv('ARBITER_LEASE_MS', 500, 600_000) leaseMs = 30_000;

  /**
   * Tasks that ended longer ago than this are deleted with their events (at start and hourly, 500 at a time); asking
   * for one then gets "not found".
   */
  @IntEnv('ARBITER_RETENTION_DAYS', 1, 3650) retentionDays = 30;
}
