import { Check, Column, Index, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity({ name: 'tenants' })
@Check(
  'ck_tenants_limits',
  `coalesce("sends_per_minute", 0) >= 0 AND coalesce("max_running_tasks", 0) >= 0
          AND coalesce("max_open_streams", 0) >= 0`,
)
export class TenantEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'varchar', length: 128 })
  name: string;

  /** The value a trusted issuer's tenant claim names for this tenant (null: none). */
  @Index('uq_tenants_external_id', { unique: true })
  @Column({ name: 'external_id', type: 'varchar', length: 256, nullable: true })
  externalId: string | null;

  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt: Date | null;

  /** Overrides of the deployment's quota defaults: null = the default, 0 = unlimited. */
  @Column({ name: 'sends_per_minute', type: 'integer', nullable: true })
  sendsPerMinute: number | null;

  @Column({ name: 'max_running_tasks', type: 'integer', nullable: true })
  maxRunningTasks: number | null;

  @Column({ name: 'max_open_streams', type: 'integer', nullable: true })
  maxOpenStreams: number | null;

  /** Budgets (docs/budgets.md): tokens (input + output) and cost per UTC day and month; null = none. */
  @Column({ name: 'tokens_per_day', type: 'bigint', nullable: true })
  tokensPerDay: string | null;

  @Column({ name: 'tokens_per_month', type: 'bigint', nullable: true })
  tokensPerMonth: string | null;

  @Column({ name: 'cost_per_day', type: 'numeric', precision: 18, scale: 6, nullable: true })
  costPerDay: string | null;

  @Column({ name: 'cost_per_month', type: 'numeric', precision: 18, scale: 6, nullable: true })
  costPerMonth: string | null;

  /** Request budgets: messages sent to its agents per UTC day and month; null = none. */
  @Column({ name: 'requests_per_day', type: 'bigint', nullable: true })
  requestsPerDay: string | null;

  @Column({ name: 'requests_per_month', type: 'bigint', nullable: true })
  requestsPerMonth: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
