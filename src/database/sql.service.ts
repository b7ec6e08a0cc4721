import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A statement of the hot path: its text, and the name PostgreSQL prepares it under (once per connection). */
export interface Statement {
  name: string;
  text: string;
}

interface PoolLike {
  query(
    config: { name?: string; text: string; values?: unknown[] } | string,
    values?: unknown[],
  ): Promise<{ rows: unknown[] }>;
  /** The embedded database's pool: a named statement (see `PGlitePool.prepared`). */
  prepared?(name: string, text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * Raw, prepared statements on the hot path, straight on the driver's pool:
 * no query runner, no entity hydration, and PostgreSQL parses and plans each
 * statement once per connection. TypeORM keeps the migrations, the entities
 * and the admin CRUD. The embedded database gets the same SQL (PGlite has no
 * named statements; it prepares the text).
 */
@Injectable()
export class Sql {
  private readonly pool: PoolLike;
  private readonly named: boolean;

  constructor(@InjectDataSource() ds: DataSource) {
    this.pool = (ds.driver as unknown as { master: PoolLike }).master;
    this.named = !!ds.options && 'url' in ds.options && !!ds.options.url;
  }

  async query<T>(statement: Statement, values: unknown[]): Promise<T[]> {
    const r = this.named
      ? await this.pool.query({ name: statement.name, text: statement.text, values })
      : this.pool.prepared
        ? await this.pool.prepared(statement.name, statement.text, values)
        : await this.pool.query(statement.text, values);
    return r.rows as T[];
  }
}
