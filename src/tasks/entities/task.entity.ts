import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TenantEntity } from '../../tenants/entities/tenant.entity.js';
import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import type { TaskStateName } from '../task-state.js';

/**
 * One A2A task (== one native request). `history`, `artifacts` and
 * `status_message` hold v1.0 ProtoJSON, the wire form the v1.0 dialect
 * serves as is. While a task runs, its artifacts live in the event log;
 * they are folded into `artifacts` when it stops.
 */
@Entity({ name: 'a2a_tasks' })
@Index('idx_a2a_tasks_list', ['tenantId', 'agentId', 'updatedAt', 'taskId'])
@Index('idx_a2a_tasks_context', ['tenantId', 'contextId', 'agentId', 'createdAt'])
@Index('uq_a2a_tasks_message', ['tenantId', 'agentId', 'messageId'], { unique: true })
@Index('idx_a2a_tasks_lease', ['leaseExpiresAt'], { where: '"lease_expires_at" IS NOT NULL' })
export class TaskEntity {
  @PrimaryColumn({ name: 'task_id', type: 'varchar', length: 64 })
  taskId: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_a2a_tasks_tenant' })
  tenant?: TenantEntity;

  @Column({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @Column({ name: 'context_id', type: 'varchar', length: 256 })
  contextId: string;

  /** The messageId of the message that created the task (unique per tenant and agent). */
  @Column({ name: 'message_id', type: 'varchar', length: 256, nullable: true })
  messageId: string | null;

  /** `TASK_STATE_*` (ProtoJSON enum name). */
  @Column({ type: 'varchar', length: 32 })
  state: TaskStateName;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** The status timestamp: when the state (or status message) last changed. */
  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'status_message', type: 'jsonb', nullable: true })
  statusMessage: MessageJson | null;

  @Column({ name: 'error_message', type: 'text', default: '' })
  errorMessage: string;

  @Column({ type: 'jsonb', default: [] })
  history: MessageJson[];

  @Column({ type: 'jsonb', default: [] })
  artifacts: ArtifactJson[];

  @Column({ type: 'jsonb', default: {} })
  metadata: Record<string, unknown>;

  /** Sizes of the JSON text of `history`, `artifacts`, and `metadata` with the status message: a page's byte budget reads them, not the content. */
  @Column({ name: 'history_bytes', type: 'bigint', default: 0 })
  historyBytes: string;

  @Column({ name: 'artifacts_bytes', type: 'bigint', default: 0 })
  artifactsBytes: string;

  @Column({ name: 'extra_bytes', type: 'bigint', default: 0 })
  extraBytes: string;

  /** The hash of the message that created the task (`messageHash`); null for tasks stored before it was kept. */
  @Column({ name: 'message_hash', type: 'varchar', length: 64, nullable: true })
  messageHash: string | null;

  @Column({ name: 'input_tokens', type: 'integer', default: 0 })
  inputTokens: number;

  @Column({ name: 'output_tokens', type: 'integer', default: 0 })
  outputTokens: number;

  /** Seq of the last event written for this task; the next one is last_seq + 1. */
  @Column({ name: 'last_seq', type: 'integer', default: 0 })
  lastSeq: number;

  /** Seq of the newest user message; a run settles the task only after taking every message up to it. */
  @Column({ name: 'last_input_seq', type: 'integer', default: 0 })
  lastInputSeq: number;

  @Column({ name: 'owner_instance', type: 'varchar', length: 64, nullable: true })
  ownerInstance: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;
}
