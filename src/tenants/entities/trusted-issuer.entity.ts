import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { TenantEntity } from './tenant.entity.js';

/** An identity provider whose JWT access tokens are accepted (see `TrustedIssuer`). */
@Entity({ name: 'trusted_issuers' })
export class TrustedIssuerEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Index('uq_trusted_issuers_issuer', { unique: true })
  @Column({ type: 'varchar', length: 512 })
  issuer: string;

  @Column({ type: 'text', array: true })
  audiences: string[];

  @Column({ type: 'text', array: true })
  algorithms: string[];

  @Column({ name: 'clock_skew_seconds', type: 'integer', default: 60 })
  clockSkewSeconds: number;

  @Column({ name: 'jwks_uri', type: 'varchar', length: 1024, nullable: true })
  jwksUri: string | null;

  @Column({ name: 'tenant_claim', type: 'varchar', length: 128, nullable: true })
  tenantClaim: string | null;

  @Column({ name: 'tenant_id', type: 'uuid', nullable: true })
  tenantId: string | null;

  @ManyToOne(() => TenantEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'tenant_id', foreignKeyConstraintName: 'fk_trusted_issuers_tenant' })
  tenant?: TenantEntity;

  @Column({ name: 'role_claim', type: 'varchar', length: 128, nullable: true })
  roleClaim: string | null;

  @Column({ name: 'scope_map', type: 'jsonb', default: {} })
  scopeMap: Record<string, string[]>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
