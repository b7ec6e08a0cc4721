import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The ledger summed per tenant, agent, provider, model and period (an hour,
 * or a UTC day), kept by the same statement that writes the ledger rows
 * (`INSERT … ON CONFLICT DO UPDATE`), so a report over a month reads a few
 * hundred rows, not millions of calls.
 */
abstract class UsageRollup {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The period's start (UTC). */
  @PrimaryColumn({ type: 'timestamptz' })
  bucket: Date;

  @PrimaryColumn({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  provider: string;

  @PrimaryColumn({ type: 'varchar', length: 128 })
  model: string;

  @Column({ type: 'bigint', default: 0 })
  calls: string;

  @Column({ name: 'input_tokens', type: 'bigint', default: 0 })
  inputTokens: string;

  @Column({ name: 'output_tokens', type: 'bigint', default: 0 })
  outputTokens: string;

  @Column({ name: 'cached_tokens', type: 'bigint', default: 0 })
  cachedTokens: string;

  /** The priced calls' cost; `unpriced_calls` had no price. */
  @Column({ type: 'numeric', precision: 24, scale: 12, default: 0 })
  cost: string;

  @Column({ name: 'unpriced_calls', type: 'bigint', default: 0 })
  unpricedCalls: string;
}

@Entity({ name: 'usage_hourly' })
@Index('idx_usage_hourly_bucket', ['bucket'])
export class UsageHourlyEntity extends UsageRollup {}

@Entity({ name: 'usage_daily' })
@Index('idx_usage_daily_bucket', ['bucket'])
export class UsageDailyEntity extends UsageRollup {}
