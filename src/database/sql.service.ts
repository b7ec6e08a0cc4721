import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** A statement of the hot path: its text, and the name PostgreSQL prepares it under (once per connection). */
export interface Statement {
  name: string;
  text: string;
}

interface PoolLike {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Raw, prepared statements on the hot path, straight on the driver's pool:
 * no query runner, no entity hydration, and the database parses and plans
 * each statement once per connection. TypeORM keeps the migrations, the
 * entities and the admin CRUD. The embedded database gets the same SQL, named
 * the same way (its pool prepares it once per session: `PGlitePool.prepared`).
 */
@Injectable()
export class Sql {
  private readonly pool: PoolLike;

  constructor(@InjectDataSource() ds: DataSource) {
    this.pool = (ds.driver as unknown as { master: PoolLike }).master;
  }

  async query<T>(statement: Statement, values: unknown[]): Promise<T[]> {
    const r = await this.pool.query({ name: statement.name, text: statement.text, values });
    return r.rows as T[];
  }
}
