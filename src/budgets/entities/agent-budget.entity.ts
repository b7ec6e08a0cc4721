import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * A tenant's budget for one of its agents (docs/budgets.md): tokens, cost and
 * requests per UTC day and month, each null for none. Set within the tenant's own
 * budget; a row with every limit null is not kept.
 */
@Entity({ name: 'agent_budgets' })
export class AgentBudgetEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @PrimaryColumn({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @Column({ name: 'tokens_per_day', type: 'bigint', nullable: true })
  tokensPerDay: string | null;

  @Column({ name: 'tokens_per_month', type: 'bigint', nullable: true })
  tokensPerMonth: string | null;

  @Column({ name: 'cost_per_day', type: 'numeric', precision: 18, scale: 6, nullable: true })
  costPerDay: string | null;

  @Column({ name: 'cost_per_month', type: 'numeric', precision: 18, scale: 6, nullable: true })
  costPerMonth: string | null;

  /** Request budgets: messages sent to the agent per UTC day and month; null = none. */
  @Column({ name: 'requests_per_day', type: 'bigint', nullable: true })
  requestsPerDay: string | null;

  @Column({ name: 'requests_per_month', type: 'bigint', nullable: true })
  requestsPerMonth: string | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
