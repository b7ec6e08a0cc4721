import { Logger } from '@nestjs/common';
import type { Logger as TypeOrmLoggerInterface } from 'typeorm';

/**
 * Routes TypeORM's messages into the app's JSON log. Query parameters are
 * never logged (they may carry token hashes or user text), and failed
 * queries are debug-level: the caller turns them into a domain error, or the
 * exception filter logs them as a 500 with the request id.
 */
export class TypeOrmLogger implements TypeOrmLoggerInterface {
  private readonly logger = new Logger('TypeORM');

  logQuery(): void {}

  logQueryError(error: string | Error, query: string): void {
    const message = error instanceof Error ? error.message : error;
    this.logger.debug({ query: query.slice(0, 500), error: message }, 'query failed');
  }

  logQuerySlow(time: number, query: string): void {
    this.logger.warn({ query: query.slice(0, 500), ms: time }, 'slow query');
  }

  logSchemaBuild(message: string): void {
    this.logger.debug(message);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
    else this.logger.debug(String(message));
  }
}
