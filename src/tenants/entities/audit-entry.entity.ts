import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One row per admin action. Never holds a token or any other secret. */
@Entity({ name: 'audit_log' })
@Index('idx_audit_log_tenant', ['tenantId', 'id'])
export class AuditEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 32 })
  actor: string;

  /** Who: `root`, `operator:<name>`, `jwt:<iss>|<sub>[|<client>]` or `token:<prefix>`. */
  @Column({ name: 'actor_id', type: 'varchar', length: 512, nullable: true })
  actorId: string | null;

  @Column({ type: 'varchar', length: 64 })
  action: string;

  @Column({ name: 'tenant_id', type: 'uuid', nullable: true })
  tenantId: string | null;

  @Column({ type: 'jsonb', default: {} })
  detail: Record<string, unknown>;

  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
