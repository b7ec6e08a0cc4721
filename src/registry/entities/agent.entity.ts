import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';
import type { Constitution } from '../constitution.js';

/** A tenant's stored agent. The constitution is kept whole, defaults applied. */
@Entity({ name: 'agents' })
@Check('ck_agents_id', `"id" ~ '^[A-Za-z0-9_-]{1,64}$' AND "id" <> 'index'`)
export class AgentEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_agents_tenant' })
  tenant?: TenantEntity;

  @Column({ type: 'jsonb' })
  constitution: Constitution;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
