import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ENTITIES } from './src/entities.js';
import { loadConfig } from './src/config/app-config.js';
import { dataSourceOptions } from './src/database/data-source-options.js';

/** The DataSource the TypeORM CLI uses (`npm run migration:*`): same options as the app. */
export default new DataSource(dataSourceOptions(loadConfig(process.env), ENTITIES));
