import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { earlyLogger, NestPino, rootLogger } from '../common/logging.js';
import { ENTITIES } from '../entities.js';
import { ConfigError, loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import { runMigrations } from '../database/migrate.js';
import { StartupError } from '../database/preflight.js';
import { resealColumn, type RunSql } from '../secrets/sealed-columns.js';
import { secretBoxOf } from '../secrets/secret-keys.js';
import { SEALED_COLUMNS } from './sealed-columns.js';

/**
 * `npm run secrets:rotate`: seals every stored secret again under the current key (`ARBITER_SECRETS_KEY` or
 * `ARBITER_SECRETS_KEY_FILE`): values sealed under a previous key (`ARBITER_SECRETS_PREVIOUS_KEYS_FILE`) and
 * values stored before any key was set. Safe while replicas run (each row is written only if unchanged since it
 * was read). Exits 1 when a value does not open (its key is not given): those rows are named and left alone.
 */
const early = earlyLogger();

async function main(): Promise<number> {
  const config = loadConfig(process.env);
  // Synchronous: a command's lines are few, and its last is written just before it exits.
  const log = rootLogger(config.logLevel, config.logFormat, true);
  Logger.overrideLogger(new NestPino(log));
  const box = secretBoxOf(config);
  if (!box.configured())
    throw new StartupError('set ARBITER_SECRETS_KEY or ARBITER_SECRETS_KEY_FILE: the key to seal under');
  const ds = new DataSource(dataSourceOptions(config, ENTITIES));
  await ds.initialize();
  let failed = 0;
  try {
    await runMigrations(ds, config.usesEmbeddedDatabase);
    const sql: RunSql = async (text, params) => {
      const r = await ds.query<unknown[]>(text, params);
      // TypeORM answers an UPDATE … RETURNING as [rows, count].
      const updated = r.length === 2 && Array.isArray(r[0]) && typeof r[1] === 'number';
      return (updated ? r[0] : r) as Record<string, unknown>[];
    };
    for (const column of SEALED_COLUMNS) {
      const report = await resealColumn(sql, box, column);
      failed += report.failed.length;
      for (const f of report.failed) log.error({ table: report.table, column: report.column, id: f.id }, f.reason);
      log.info(
        { ...report, failed: report.failed.length, key: box.keyId },
        `${report.table}.${report.column}: ${report.resealed} sealed again, ${report.current} already current`,
      );
    }
  } finally {
    await ds.destroy();
  }
  log.info(
    { key: box.keyId, failed },
    failed ? `${failed} value(s) did not open` : 'every stored secret is sealed under the current key',
  );
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ConfigError) early.fatal({ problems: err.problems }, `arbiter secrets:rotate: ${err.message}`);
    else if (err instanceof StartupError) early.fatal(`arbiter secrets:rotate: ${err.message}`);
    else early.fatal({ err }, 'arbiter secrets:rotate failed');
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
