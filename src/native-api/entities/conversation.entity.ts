import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';

/**
 * A native conversation with one agent. Its id is the A2A context id of its
 * turns: each turn is a task in that context, so the messages live in the
 * task log and an A2A client sending the same contextId continues it.
 */
@Entity({ name: 'conversations' })
@Index('idx_conversations_list', ['tenantId', 'updatedAt', 'id'])
export class ConversationEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_conversations_tenant' })
  tenant?: TenantEntity;

  @Column({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @Column({ type: 'varchar', length: 200, default: '' })
  title: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
