import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';

/** One `/mem` entry. Tenant-scoped: another tenant's entry reads like a missing one. */
@Entity({ name: 'memory_entries' })
@Index('idx_memory_entries_tenant', ['tenantId', 'id'])
// A GIN index on to_tsvector('english', content), created by the migration.
@Index('idx_memory_entries_search', { synchronize: false })
export class MemoryEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_memory_entries_tenant' })
  tenant?: TenantEntity;

  @Column({ type: 'text' })
  content: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
