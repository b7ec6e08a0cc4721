import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { TenantLimits } from '../../common/auth.decorators.js';
import { IsNull, type DataSource, type EntityManager } from 'typeorm';
import { TenantTokenEntity } from '../entities/tenant-token.entity.js';
import { TenantEntity } from '../entities/tenant.entity.js';

export interface TokenLookup {
  tenantId: string;
  tenantName: string;
  tenantDisabledAt: Date | null;
  tokenId: string;
  tokenPrefix: string;
  limits: TenantLimits;
  scopes: string[];
  lastUsedAt: Date | null;
}

/** Tenants and their tokens. Tokens are looked up by SHA-256 hash only. */
@Injectable()
export class TenantRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  transaction<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(work);
  }

  async insertTenant(
    em: EntityManager,
    tenant: Pick<TenantEntity, 'id' | 'name' | 'externalId'>,
  ): Promise<TenantEntity> {
    await em.insert(TenantEntity, { id: tenant.id, name: tenant.name, externalId: tenant.externalId });
    return em.findOneByOrFail(TenantEntity, { id: tenant.id });
  }

  findTenant(id: string, em: EntityManager = this.ds.manager): Promise<TenantEntity | null> {
    return em.findOneBy(TenantEntity, { id });
  }

  /** Newest first; keyset pagination on (created_at, id). */
  async listTenants(limit: number, after?: { createdAt: string; id: string }): Promise<TenantEntity[]> {
    const qb = this.ds.getRepository(TenantEntity).createQueryBuilder('t');
    if (after) {
      // Cursors carry milliseconds; compare at that precision so no row falls between pages.
      qb.where("(date_trunc('milliseconds', t.created_at), t.id) < (:createdAt::timestamptz, :id::uuid)", after);
    }
    return qb
      .orderBy("date_trunc('milliseconds', t.created_at)", 'DESC')
      .addOrderBy('t.id', 'DESC')
      .limit(limit)
      .getMany();
  }

  /** Sets or clears `disabled_at`; returns the tenant or null when it does not exist. */
  async setDisabled(em: EntityManager, id: string, disabled: boolean): Promise<TenantEntity | null> {
    await em
      .createQueryBuilder()
      .update(TenantEntity)
      .set({ disabledAt: disabled ? () => 'COALESCE(disabled_at, now())' : null })
      .where('id = :id', { id })
      .execute();
    return em.findOneBy(TenantEntity, { id });
  }

  async setExternalId(em: EntityManager, id: string, externalId: string | null): Promise<TenantEntity | null> {
    await em.update(TenantEntity, { id }, { externalId });
    return em.findOneBy(TenantEntity, { id });
  }

  /** The enabled tenant whose external id is this, if any. */
  async findByExternalId(externalId: string): Promise<TenantEntity | null> {
    return this.ds.manager.findOneBy(TenantEntity, { externalId });
  }

  async setLimits(
    em: EntityManager,
    id: string,
    limits: Partial<
      Pick<
        TenantEntity,
        | 'sendsPerMinute'
        | 'maxRunningTasks'
        | 'maxOpenStreams'
        | 'tokensPerDay'
        | 'tokensPerMonth'
        | 'costPerDay'
        | 'costPerMonth'
        | 'requestsPerDay'
        | 'requestsPerMonth'
      >
    >,
  ): Promise<TenantEntity | null> {
    if (Object.keys(limits).length) {
      await em.createQueryBuilder().update(TenantEntity).set(limits).where('id = :id', { id }).execute();
    }
    return em.findOneBy(TenantEntity, { id });
  }

  async insertToken(
    em: EntityManager,
    token: Pick<TenantTokenEntity, 'id' | 'tenantId' | 'tokenHash' | 'prefix' | 'scopes'>,
  ): Promise<TenantTokenEntity> {
    await em.insert(TenantTokenEntity, token);
    return em.findOneByOrFail(TenantTokenEntity, { id: token.id });
  }

  /** Revokes every active token of the tenant except `keepId`; returns the revoked ids. */
  async revokeAllTokens(em: EntityManager, tenantId: string, keepId?: string): Promise<string[]> {
    const qb = em
      .createQueryBuilder()
      .update(TenantTokenEntity)
      .set({ revokedAt: () => 'now()' })
      .where('tenant_id = :tenantId AND revoked_at IS NULL', { tenantId });
    if (keepId) qb.andWhere('id <> :keepId', { keepId });
    const res = await qb.returning(['id']).execute();
    return (res.raw as { id: string }[]).map((r) => r.id);
  }

  /** Revokes one token; false when the tenant has no such active token. */
  async revokeToken(em: EntityManager, tenantId: string, tokenId: string): Promise<boolean> {
    const res = await em
      .createQueryBuilder()
      .update(TenantTokenEntity)
      .set({ revokedAt: () => 'now()' })
      .where('id = :tokenId AND tenant_id = :tenantId AND revoked_at IS NULL', { tokenId, tenantId })
      .execute();
    return (res.affected ?? 0) > 0;
  }

  findToken(tenantId: string, tokenId: string): Promise<TenantTokenEntity | null> {
    return this.ds.manager.findOneBy(TenantTokenEntity, { id: tokenId, tenantId });
  }

  listTokens(tenantId: string): Promise<TenantTokenEntity[]> {
    return this.ds.manager.find(TenantTokenEntity, {
      where: { tenantId },
      order: { createdAt: 'DESC', id: 'DESC' },
    });
  }

  countActiveTokens(tenantId: string): Promise<number> {
    return this.ds.manager.countBy(TenantTokenEntity, { tenantId, revokedAt: IsNull() });
  }

  /** The active token with this hash, with its tenant. */
  async lookupActiveToken(tokenHash: string): Promise<TokenLookup | null> {
    const rows: {
      tenant_id: string;
      tenant_name: string;
      disabled_at: Date | null;
      token_id: string;
      token_prefix: string;
      sends_per_minute: number | null;
      max_running_tasks: number | null;
      max_open_streams: number | null;
      last_used_at: Date | null;
      scopes: string[];
    }[] = await this.ds.query(
      `SELECT t.id AS tenant_id, t.name AS tenant_name, t.disabled_at, k.id AS token_id, k.prefix AS token_prefix, k.last_used_at, k.scopes,
              t.sends_per_minute, t.max_running_tasks, t.max_open_streams
         FROM tenant_tokens k JOIN tenants t ON t.id = k.tenant_id
        WHERE k.token_hash = $1 AND k.revoked_at IS NULL`,
      [tokenHash],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      tenantId: r.tenant_id,
      tenantName: r.tenant_name,
      tenantDisabledAt: r.disabled_at,
      tokenId: r.token_id,
      tokenPrefix: r.token_prefix,
      limits: {
        sendsPerMinute: r.sends_per_minute,
        maxRunningTasks: r.max_running_tasks,
        maxOpenStreams: r.max_open_streams,
      },
      scopes: r.scopes,
      lastUsedAt: r.last_used_at,
    };
  }

  /** Of these token ids, the ones still active with an enabled tenant. */
  async usableTokens(tokenIds: string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.ds.query(
      `SELECT k.id FROM tenant_tokens k JOIN tenants t ON t.id = k.tenant_id
        WHERE k.id = ANY($1::uuid[]) AND k.revoked_at IS NULL AND t.disabled_at IS NULL`,
      [tokenIds],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Of these `<tenant id>|<issuer id>` pairs (the tenants and issuers of JWTs
   * that hold streams), the ones whose tenant is enabled and whose issuer is
   * still trusted.
   */
  async usableJwtAccess(pairs: string[]): Promise<string[]> {
    const rows: { pair: string }[] = await this.ds.query(
      `SELECT t.id || '|' || i.id AS pair FROM tenants t, trusted_issuers i
        WHERE t.disabled_at IS NULL AND (t.id::text || '|' || i.id::text) = ANY($1::text[])`,
      [pairs],
    );
    return rows.map((r) => r.pair);
  }

  /** Records use at most once a minute per token, so auth stays a read on the hot path. */
  async touchToken(tokenId: string): Promise<void> {
    await this.ds.query(
      `UPDATE tenant_tokens SET last_used_at = now()
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '60 seconds')`,
      [tokenId],
    );
  }
}
