import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The messages each agent took per UTC day — a new task, or a message that continues one — counted by the
 * statement that stores it (`tasks/statements/`), so every replica's sends are counted once, durably: what
 * request budgets are checked against (docs/budgets.md).
 */
@Entity({ name: 'usage_requests' })
export class UsageRequestsEntity {
  @PrimaryColumn({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  /** The UTC day's start. */
  @PrimaryColumn({ type: 'timestamptz' })
  bucket: Date;

  @PrimaryColumn({ name: 'agent_id', type: 'varchar', length: 64 })
  agentId: string;

  @Column({ type: 'bigint', default: 0 })
  requests: string;
}
