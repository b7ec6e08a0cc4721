import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { MemoryEntryEntity } from '../entities/memory-entry.entity.js';

export interface MemoryEntry {
  id: string;
  content: string;
  createdAt: Date;
}

export const MAX_MEMORY_CONTENT = 4096;
const LIST_LIMIT = 20;

/**
 * The tenant's shared memory behind `/mem`: short text entries with
 * full-text search (PostgreSQL `tsvector`, english stemming, ranked).
 * Every query is scoped by tenant.
 */
@Injectable()
export class MemoryService {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async add(tenantId: string, content: string): Promise<MemoryEntry> {
    const rows = await this.ds.query<{ id: string; created_at: Date }[]>(
      `INSERT INTO "memory_entries" ("tenant_id", "content") VALUES ($1, $2) RETURNING "id", "created_at"`,
      [tenantId, content],
    );
    const row = rows[0];
    if (!row) throw new Error('insert returned nothing');
    return { id: String(row.id), content, createdAt: new Date(row.created_at) };
  }

  async get(tenantId: string, id: string): Promise<MemoryEntry | null> {
    if (!/^\d{1,18}$/.test(id)) return null;
    const rows = await this.ds.query<{ id: string; content: string; created_at: Date }[]>(
      `SELECT "id", "content", "created_at" FROM "memory_entries" WHERE "tenant_id" = $1 AND "id" = $2`,
      [tenantId, id],
    );
    return rows[0] ? toEntry(rows[0]) : null;
  }

  /** The newest entries first. */
  async list(tenantId: string, limit = LIST_LIMIT): Promise<{ entries: MemoryEntry[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.ds.query<{ id: string; content: string; created_at: Date }[]>(
        `SELECT "id", "content", "created_at" FROM "memory_entries" WHERE "tenant_id" = $1 ORDER BY "id" DESC LIMIT $2`,
        [tenantId, limit],
      ),
      this.ds.query<{ n: string }[]>(`SELECT count(*) AS n FROM "memory_entries" WHERE "tenant_id" = $1`, [tenantId]),
    ]);
    return { entries: rows.map(toEntry), total: Number(count[0]?.n ?? 0) };
  }

  /** Best matches first (web-search syntax: words, "phrases", -exclusions, or). */
  async search(tenantId: string, query: string, limit = LIST_LIMIT): Promise<MemoryEntry[]> {
    const rows = await this.ds.query<{ id: string; content: string; created_at: Date }[]>(
      `SELECT "id", "content", "created_at" FROM "memory_entries"
        WHERE "tenant_id" = $1 AND to_tsvector('english', "content") @@ websearch_to_tsquery('english', $2)
        ORDER BY ts_rank(to_tsvector('english', "content"), websearch_to_tsquery('english', $2)) DESC, "id" DESC
        LIMIT $3`,
      [tenantId, query, limit],
    );
    return rows.map(toEntry);
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    if (!/^\d{1,18}$/.test(id)) return false;
    const res = await this.ds.getRepository(MemoryEntryEntity).delete({ tenantId, id });
    return (res.affected ?? 0) > 0;
  }
}

function toEntry(r: { id: string; content: string; created_at: Date }): MemoryEntry {
  return { id: String(r.id), content: r.content, createdAt: new Date(r.created_at) };
}
