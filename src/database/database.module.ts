import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
import { runMigrations } from './migrate.js';

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => dataSourceOptions(config),
      dataSourceFactory: async (options) => {
        if (!options) throw new Error('no data source options');
        const logger = new Logger('Database');
        const embedded = !('url' in options && options.url);
        const ds = new DataSource(options);
        await ds.initialize();
        const applied = await runMigrations(ds, embedded);
        logger.log(
          applied.length
            ? `applied ${applied.length} migration(s): ${applied.map((m) => m.name).join(', ')}`
            : 'schema up to date',
        );
        return ds;
      },
    }),
  ],
})
export class DatabaseModule {}
