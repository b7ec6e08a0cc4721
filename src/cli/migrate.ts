import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ENTITIES } from '../entities.js';
import { ConfigError, loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { runMigrations } from '../database/migrate.js';

/**
 * `npm run migrate`: applies pending migrations and exits. The server also
 * does this at start; this entry point is for release jobs and init
 * containers that migrate before any replica starts.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const ds = new DataSource(dataSourceOptions(config, ENTITIES));
  await ds.initialize();
  try {
    const applied = await runMigrations(ds, config.usesEmbeddedDatabase);
    process.stdout.write(
      applied.length ? `applied: ${applied.map((m) => m.name).join(', ')}\n` : 'schema up to date\n',
    );
  } finally {
    await ds.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`arbiter migrate: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
