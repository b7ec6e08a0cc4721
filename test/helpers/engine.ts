import { TENANT_SCOPES, type TenantPrincipal } from '../../src/common/auth.decorators.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module.js';
import { NestPino, rootLogger } from '../../src/common/logging.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { freshDatabase, seedEmbeddedDatabase, type TestDatabase } from './database.js';
import { tempHome, withLoopbackProviders } from './server.js';

/**
 * The whole application without its HTTP server, on a database of its own:
 * the service tier's tests call the engine and the request handler directly.
 */
export interface TestEngine {
  app: INestApplicationContext;
  config: AppConfig;
  ds: DataSource;
  /** A tenant row to own test tasks. */
  newTenant(): Promise<string>;
  close(): Promise<void>;
}

export async function startEngine(env: Record<string, string> = {}): Promise<TestEngine> {
  const home = tempHome();
  const db: TestDatabase = await freshDatabase();
  if (!db.url) seedEmbeddedDatabase(home);
  let config: AppConfig;
  let app: INestApplicationContext;
  try {
    config = loadConfig(
      withLoopbackProviders({
        ARBITER_HOME: home,
        ARBITER_ADMIN_TOKEN: `adm_${randomBytes(24).toString('hex')}`,
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        // Runs left in flight end at close at once (a test of the grace period sets its own).
        ARBITER_SHUTDOWN_GRACE_MS: '0',
        ...(db.url ? { DATABASE_URL: db.url } : {}),
        ...env,
      }),
    );
    app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { bufferLogs: true });
  } catch (err) {
    // An engine that fails to start leaves neither its database nor its home behind.
    // (The start's error is the one the caller sees, even if the drop fails too.)
    await db.drop().catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
    throw err;
  }
  app.useLogger(new NestPino(rootLogger(config.logLevel)));
  const ds = app.get<DataSource>(getDataSourceToken());
  return {
    app,
    config,
    ds,
    newTenant: async () => {
      const id = randomUUID();
      await ds.query(`INSERT INTO tenants (id, name) VALUES ($1, $2)`, [id, `t-${id.slice(0, 8)}`]);
      return id;
    },
    close: async () => {
      await app.close();
      await db.drop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** A tenant principal as an opaque token with every tenant scope would authenticate (for service tests). */
export function tenantPrincipal(tenantId: string, name = 't', tokenId = 'x'): TenantPrincipal {
  return {
    tenantId,
    tenantName: name,
    tokenId,
    tokenPrefix: `atr_${tokenId}`,
    scopes: TENANT_SCOPES,
    actor: `token:atr_${tokenId}`,
  };
}
