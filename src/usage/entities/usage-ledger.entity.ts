import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One model call, accounted: who (tenant, agent, task), on what (provider,
 * model), how many tokens, and what it cost at the price in force when it
 * was made. Written in the same statement as the task event that reports
 * the call (`tasks/statements/usage.sql.ts`), never changed afterwards. No
 * foreign key: the ledger outlives the tasks that retention deletes.
 */
@Entity({ name: 'usage_ledger' })
@Index('idx_usage_ledger_tenant_at', ['tenantId', 'createdAt'])
@Index('idx_usage_ledger_task', ['taskId'])
export class UsageLedgerEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ name: 'task_id', type: 'varchar', length: 64 })
  taskId: string;

  @Column({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @Column({ type: 'varchar', length: 32 })
  provider: string;

  @Column({ type: 'varchar', length: 128 })
  model: string;

  @Column({ name: 'input_tokens', type: 'bigint', default: 0 })
  inputTokens: string;

  @Column({ name: 'output_tokens', type: 'bigint', default: 0 })
  outputTokens: string;

  @Column({ name: 'cached_tokens', type: 'bigint', default: 0 })
  cachedTokens: string;

  /** In `currency`; null when no price was configured for the model at the time. */
  @Column({ type: 'numeric', precision: 24, scale: 12, nullable: true })
  cost: string | null;

  @Column({ type: 'varchar', length: 3, nullable: true })
  currency: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
