import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** Stored file bytes (`task_files`), read by id within a tenant; writes go with the task's own statements. */
@Injectable()
export class TaskFileRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** The bytes of the tenant's files among `ids` (another tenant's id reads as missing). */
  async bytes(tenantId: string, ids: string[]): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    if (ids.length === 0) return out;
    const rows = await this.ds.query<{ id: string; bytes: Uint8Array }[]>(
      `SELECT id, bytes FROM task_files WHERE tenant_id = $1 AND id = ANY($2::uuid[])`,
      [tenantId, [...new Set(ids)]],
    );
    // node-postgres gives a Buffer, PGlite a Uint8Array.
    for (const r of rows) out.set(r.id, Buffer.isBuffer(r.bytes) ? r.bytes : Buffer.from(r.bytes));
    return out;
  }

  /** How many files the tenant has stored for a task (the operator's and the tests' view). */
  async count(tenantId: string, taskId: string): Promise<number> {
    const [row] = await this.ds.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM task_files WHERE tenant_id = $1 AND task_id = $2`,
      [tenantId, taskId],
    );
    return row?.n ?? 0;
  }
}
