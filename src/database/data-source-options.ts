import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { ConversationEntity } from '../native-api/entities/conversation.entity.js';
import { MemoryEntryEntity } from '../orchestrator/entities/memory-entry.entity.js';
import { AgentEntity } from '../registry/entities/agent.entity.js';
import { TaskEventEntity } from '../tasks/entities/task-event.entity.js';
import { TaskEntity } from '../tasks/entities/task.entity.js';
import { AuditEntryEntity } from '../tenants/entities/audit-entry.entity.js';
import { TenantTokenEntity } from '../tenants/entities/tenant-token.entity.js';
import { TenantEntity } from '../tenants/entities/tenant.entity.js';
import { MIGRATIONS } from './migrations/index.js';
import { pgliteDriver } from './pglite-pool.js';
import { TypeOrmLogger } from './typeorm-logger.js';

export const ENTITIES = [
  TenantEntity,
  TenantTokenEntity,
  AuditEntryEntity,
  AgentEntity,
  TaskEntity,
  TaskEventEntity,
  MemoryEntryEntity,
  ConversationEntity,
];

/**
 * The one DataSource definition, shared by the app and the TypeORM CLI
 * (`ormconfig.ts`): PostgreSQL at `DATABASE_URL`, else embedded PGlite under
 * `ARBITER_HOME/pgdata`. Never `synchronize`; the schema is the migrations'.
 */
export function dataSourceOptions(config: AppConfig): DataSourceOptions {
  const common = {
    type: 'postgres' as const,
    entities: ENTITIES,
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
