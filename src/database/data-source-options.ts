import type { DataSourceOptions } from 'typeorm';

/** The entity classes of every module (see `src/entities.ts`): the database layer imports no module. */
export type EntityList = NonNullable<DataSourceOptions['entities']>;
import type { AppConfig } from '../config/app-config.js';
import { MIGRATIONS } from './migrations/index.js';
import { pgliteDriver } from './pglite-pool.js';
import { TypeOrmLogger } from './typeorm-logger.js';

/**
 * The one DataSource definition, shared by the app and the TypeORM CLI
 * (`ormconfig.ts`): PostgreSQL at `DATABASE_URL`, else embedded PGlite under
 * `ARBITER_HOME/pgdata`. Never `synchronize`; the schema is the migrations'.
 */
export function dataSourceOptions(config: AppConfig, entities: EntityList): DataSourceOptions {
  const common = {
    type: 'postgres' as const,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each' as const,
    synchronize: false,
    migrationsRun: false,
    logger: new TypeOrmLogger(),
    maxQueryExecutionTime: 2_000,
  };
  if (config.databaseUrl) {
    return {
      ...common,
      url: config.databaseUrl,
      poolSize: config.dbPoolSize,
      applicationName: 'arbiter',
      // Fail fast when the server is unreachable: a request gets a retryable 503 / -32603, not a hang.
      connectTimeoutMS: 3_000,
      extra: { idleTimeoutMillis: 30_000, query_timeout: 15_000, keepAlive: true },
    };
  }
  return {
    ...common,
    // The pool ignores connection settings; the name/user only satisfy the driver.
    database: 'postgres',
    username: 'postgres',
    driver: pgliteDriver(config.embeddedDataDir),
  };
}
