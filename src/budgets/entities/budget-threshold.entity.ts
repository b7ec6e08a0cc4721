import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A budget's soft threshold crossed in one period: at most one row per
 * tenant, agent ('' for the tenant's own budget), budget key and period
 * start, so the crossing is recorded once over every replica.
 */
@Entity({ name: 'budget_thresholds' })
export class BudgetThresholdEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The agent whose budget it is; '' for the tenant's own. */
  @PrimaryColumn({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  /** `tokens_per_day`, `tokens_per_month`, `cost_per_day` or `cost_per_month`. */
  @PrimaryColumn({ type: 'varchar', length: 32 })
  budget: string;

  /** The period's start (UTC). */
  @PrimaryColumn({ name: 'period_start', type: 'timestamptz' })
  periodStart: Date;

  @Column({ name: 'used', type: 'numeric', precision: 24, scale: 6 })
  used: string;

  @CreateDateColumn({ name: 'crossed_at', type: 'timestamptz' })
  crossedAt: Date;
}
