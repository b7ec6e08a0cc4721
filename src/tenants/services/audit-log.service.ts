import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { AuditEntryEntity } from '../entities/audit-entry.entity.js';
import { AuditRepository, type AuditRecord } from '../repositories/audit.repository.js';

export type { AuditRecord };

/**
 * The audit log, for every module that changes something worth recording:
 * a row is written in the caller's transaction, so the change and its
 * record commit together (or neither does).
 */
@Injectable()
export class AuditLog {
  constructor(private readonly rows: AuditRepository) {}

  record(em: EntityManager, rec: AuditRecord): Promise<void> {
    return this.rows.record(em, rec);
  }

  /** Newest first, keyset on id. */
  list(limit: number, opts: { tenantId?: string; beforeId?: string }): Promise<AuditEntryEntity[]> {
    return this.rows.list(limit, opts);
  }
}
