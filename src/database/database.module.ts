import { Global, Logger, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions, type EntityList } from './data-source-options.js';
import { runMigrations } from './migrate.js';
import { InstanceIdentity } from './instance-identity.js';
import { ReplicaChannel } from './replica-channel.service.js';
import { Sql } from './sql.service.js';
import { PlannerStatistics } from './planner-statistics.service.js';

/**
 * The database, its migrations, this replica's identity and its notice connection, and the planner's statistics
 * kept in step with the tables' growth; `entities` are every module's (`src/entities.ts`).
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(entities: EntityList): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      imports: [databaseConnection(entities)],
      providers: [InstanceIdentity, ReplicaChannel, Sql, PlannerStatistics],
      exports: [InstanceIdentity, ReplicaChannel, Sql],
    };
  }
}

function databaseConnection(entities: EntityList): DynamicModule {
  return TypeOrmModule.forRootAsync({
    inject: [AppConfig],
    useFactory: (config: AppConfig) => ({
      ...dataSourceOptions(config, entities),
      // Fail fast with one clear message (main.ts checks the server first, and reports a failure once);
      // a supervisor restarts the process.
      retryAttempts: 0,
      toRetry: () => false,
    }),
    dataSourceFactory: async (options) => {
      if (!options) throw new Error('no data source options');
      const logger = new Logger('Database');
      const embedded = !('url' in options && options.url);
      const ds = new DataSource(options);
      await ds.initialize();
      let applied;
      try {
        applied = await runMigrations(ds, embedded);
      } catch (err) {
        await ds.destroy().catch(() => undefined);
        throw err;
      }
      logger.log(
        applied.length
          ? `applied ${applied.length} migration(s): ${applied.map((m) => m.name).join(', ')}`
          : 'schema up to date',
      );
      return ds;
    },
  });
}
