import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { TenantEntity } from '../tenants/entities/tenant.entity.js';

/**
 * A tenant's own remote A2A agent (`kind` a2a) or MCP server (`kind` mcp), as the API took it: `config` is the
 * entry's fields with every secret replaced by `"set"`, `secrets` those values sealed together (`SecretBox`,
 * bound to the tenant, the entry and the column), or null when it has none.
 */
@Entity({ name: 'tenant_registry_entries' })
@Check('ck_tenant_registry_entries_kind', `"kind" IN ('a2a', 'mcp')`)
@Index('uq_tenant_registry_entries_name', ['tenantId', 'kind', 'name'], { unique: true })
export class TenantRegistryEntryEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_tenant_registry_entries_tenant' })
  tenant?: TenantEntity;

  @Column({ type: 'varchar', length: 8 })
  kind: 'a2a' | 'mcp';

  @Column({ type: 'varchar', length: 64 })
  name: string;

  @Column({ type: 'jsonb' })
  config: Record<string, unknown>;

  @Column({ type: 'text', nullable: true })
  secrets: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
