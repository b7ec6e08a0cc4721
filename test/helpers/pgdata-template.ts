import './quiet.js';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { runMigrations } from '../../src/database/migrate.js';
import { ENTITIES } from '../../src/entities.js';

/**
 * Creates a migrated embedded database under `home` (`home/pgdata`, as the
 * app would) and closes it; returns its path. `scripts/run-tests.mjs` builds
 * one per run for `seedEmbeddedDatabase` (see `database.ts`) to copy.
 *
 * Its copies start with a smaller buffer pool than PostgreSQL's default 128 MB: every embedded test server sets
 * up the whole pool as it opens the database, which under the tests' baseline-only WebAssembly (`wasm-baseline.ts`)
 * costs more than the rest of the open (measured: opening a copy took 0.96–1.21 s of CPU with 128 MB, 0.56–0.60 s
 * with 16 MB). A test database of a few MB fits in 16 MB. A server started without the template (a first start,
 * the migrations test) keeps the default, as in production.
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
  appendFileSync(
    join(config.embeddedDataDir, 'postgresql.conf'),
    "\n# The run's test servers (test/helpers/pgdata-template.ts)\nshared_buffers = 16MB\n",
  );
  return config.embeddedDataDir;
}
