import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { TenantEntity } from './tenant.entity.js';

/** A tenant bearer token. Only the SHA-256 of the token is stored. */
@Entity({ name: 'tenant_tokens' })
@Index('idx_tenant_tokens_tenant', ['tenantId'])
export class TenantTokenEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_tenant_tokens_tenant' })
  tenant?: TenantEntity;

  @Index('uq_tenant_tokens_hash', { unique: true })
  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash: string;

  /** The first characters of the token, for humans telling tokens apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** What the token may do (see `TENANT_SCOPES`). */
  @Column({ type: 'text', array: true, default: () => "'{a2a:invoke,agents:read,agents:write,tasks:read}'" })
  scopes: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
