import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TaskEntity } from '../../tasks/entities/task.entity.js';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';

export type PushConfigState = 'active' | 'dead';

/**
 * A webhook for one task's updates (spec §3.1.7) and where its delivery
 * stands: `delivered_seq` is the cursor into the task's event log (the
 * outbox); `dead` stops delivery after too many failures. Read and written
 * with SQL by `PushConfigRepository`; the entity keeps the schema honest.
 */
@Entity({ name: 'push_configs' })
@Check('ck_push_configs_state', `"state" IN ('active', 'dead')`)
@Index('uq_push_configs_task', ['taskId', 'configId'], { unique: true })
@Index('idx_push_configs_due', ['nextAttemptAt'], { where: `"state" = 'active'` })
export class PushConfigEntity {
  /** Internal id: the first half of every delivery id. */
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_push_configs_tenant' })
  tenant?: TenantEntity;

  @Column({ name: 'task_id', type: 'varchar', length: 64 })
  taskId: string;

  @ManyToOne(() => TaskEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'task_id', foreignKeyConstraintName: 'fk_push_configs_task' })
  task?: TaskEntity;

  /** The client's id for the config (unique per task). */
  @Column({ name: 'config_id', type: 'varchar', length: 256 })
  configId: string;

  /** The A2A version it was created through; payloads go out in that dialect. */
  @Column({ type: 'varchar', length: 8 })
  dialect: string;

  @Column({ type: 'text' })
  url: string;

  /** Secret: sent as `X-A2A-Notification-Token`, never read back. */
  @Column({ type: 'text', nullable: true })
  token: string | null;

  @Column({ name: 'auth_scheme', type: 'varchar', length: 64, nullable: true })
  authScheme: string | null;

  /** Secret: sent as `Authorization: <scheme> <credentials>`, never read back. */
  @Column({ type: 'text', nullable: true })
  credentials: string | null;

  @Column({ type: 'varchar', length: 16, default: 'active' })
  state: PushConfigState;

  @Column({ name: 'delivered_seq', type: 'integer', default: 0 })
  deliveredSeq: number;

  @Column({ name: 'delivered_count', type: 'integer', default: 0 })
  deliveredCount: number;

  /** Failed attempts in a row. */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @Column({ name: 'first_failed_at', type: 'timestamptz', nullable: true })
  firstFailedAt: Date | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_delivered_at', type: 'timestamptz', nullable: true })
  lastDeliveredAt: Date | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'lease_owner', type: 'varchar', length: 64, nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
