import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { earlyLogger, NestPino, rootLogger } from '../common/logging.js';
import { ENTITIES } from '../entities.js';
import { ConfigError, loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { runMigrations } from '../database/migrate.js';

/**
 * `npm run migrate`: applies pending migrations and exits. The server also
 * does this at start; this entry point is for release jobs and init
 * containers that migrate before any replica starts.
 */
/** Before the configuration is read (a bad variable): the same JSON lines as the server's. */
const early = earlyLogger();

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // Synchronous: a command's lines are few, and its last is written just before it exits.
  const log = rootLogger(config.logLevel, config.logFormat, true);
  // TypeORM's lines (through Nest's Logger) and ours go through the server's JSON logger.
  Logger.overrideLogger(new NestPino(log));
  const ds = new DataSource(dataSourceOptions(config, ENTITIES));
  await ds.initialize();
  try {
    const applied = await runMigrations(ds, config.usesEmbeddedDatabase);
    log.info(
      { applied: applied.map((m) => m.name) },
      applied.length ? `applied ${applied.length} migration(s)` : 'schema up to date',
    );
  } finally {
    await ds.destroy();
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) early.fatal({ problems: err.problems }, `arbiter migrate: ${err.message}`);
  else early.fatal({ err }, 'arbiter migrate failed');
  // The early logger writes synchronously: the line is out before the exit.
  process.exit(err instanceof ConfigError ? 2 : 1);
});
