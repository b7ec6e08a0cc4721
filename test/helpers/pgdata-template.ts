import './quiet.js';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { ENTITIES } from '../../src/entities.js';

/**
 * Creates a migrated embedded database under `home` (`home/pgdata`, as the
 * app would) and closes it; returns its path. `scripts/run-tests.mjs` builds
 * one per run for `seedEmbeddedDatabase` (see `database.ts`) to copy.
 */
export async function buildPgdataTemplate(home: string): Promise<string> {
  const config = loadConfig({ ARBITER_HOME: home, LOG_LEVEL: 'silent' });
  const ds = new DataSource(dataSourceOptions(config, ENTITIES));
  await ds.initialize();
  try {
    await runMigrations(ds, true);
  } finally {
    await ds.destroy();
  }
  return config.embeddedDataDir;
}
