import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { ChangeBy } from '../../common/auth.decorators.js';
import { AuditEntryEntity } from '../entities/audit-entry.entity.js';

export interface AuditRecord {
  /** `admin` (the default) or `tenant` (a tenant token acting on its own resources). */
  actor?: 'admin' | 'tenant';
  action: string;
  tenantId: string | null;
  detail?: Record<string, unknown>;
  /** Who made the change (their actor id), and in which request. */
  by?: ChangeBy;
  requestId?: string | null;
}

@Injectable()
export class AuditRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Written in the caller's transaction, so the action and its audit row commit together. */
  async record(em: EntityManager, rec: AuditRecord): Promise<void> {
    await em.insert(AuditEntryEntity, {
      actor: rec.actor ?? 'admin',
      action: rec.action,
      tenantId: rec.tenantId,
      detail: (rec.detail ?? {}) as AuditEntryEntity['detail'] & object,
      actorId: rec.by?.actor ?? null,
      requestId: rec.by?.requestId ?? rec.requestId ?? null,
    });
  }

  /** Newest first, keyset on id. */
  list(limit: number, opts: { tenantId?: string; beforeId?: string }): Promise<AuditEntryEntity[]> {
    const qb = this.ds.getRepository(AuditEntryEntity).createQueryBuilder('a');
    if (opts.tenantId) qb.andWhere('a.tenant_id = :tenantId', { tenantId: opts.tenantId });
    if (opts.beforeId) qb.andWhere('a.id < :beforeId', { beforeId: opts.beforeId });
    return qb.orderBy('a.id', 'DESC').limit(limit).getMany();
  }
}
