import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { TENANT_SCOPES, type ChangeBy, type TenantScope } from '../../common/auth.decorators.js';
import { UUID_PATTERN } from '../../common/validation.js';
import { DomainError } from '../../common/errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '../../common/pagination.dto.js';
import { TenantTokenEntity } from '../entities/tenant-token.entity.js';
import {
  auditView,
  tenantView,
  tokenView,
  type AuditView,
  type IssuedToken,
  type TenantView,
  type TokenView,
} from './tenant-views.js';
import type { TenantEntity } from '../entities/tenant.entity.js';
import { AuditRepository } from '../repositories/audit.repository.js';
import { TenantRepository } from '../repositories/tenant.repository.js';
import { JwtPrincipals } from '../identity/jwt-principals.service.js';
import { TenantAuthService } from './tenant-auth.service.js';
import { OpenStreams, type AccessChange } from './open-streams.service.js';
import { generateTenantToken, sha256Hex, tokenPrefix } from './token-crypto.js';

export type { AuditView, IssuedToken, TenantView, TokenView } from './tenant-views.js';

/**
 * Tenant lifecycle and token management; every change writes an audit row
 * in the same transaction. A revoked token or a disabled tenant is refused
 * from the next request on, and the streams already open under it end on
 * every replica (see `OpenStreams`).
 */
@Injectable()
export class TenantsService {
  constructor(
    private readonly tenants: TenantRepository,
    private readonly audit: AuditRepository,
    private readonly streams: OpenStreams,
    private readonly auth: TenantAuthService,
    private readonly jwts: JwtPrincipals,
  ) {}

  /** Runs `work` in a transaction that announces `changes(result)` on commit, then applies them here. */
  private async revoking<T>(
    work: (em: EntityManager) => Promise<T>,
    changes: (result: T) => AccessChange[],
  ): Promise<T> {
    const { r: result, heard } = await this.tenants.transaction(async (em) => {
      const r = await work(em);
      return { r, ...(await this.streams.announce(em, changes(r))) };
    });
    this.auth.forget();
    this.jwts.forget();
    for (const c of changes(result)) this.streams.apply(c);
    // Answer once the change is in force on every replica (their token caches dropped it).
    await heard;
    return result;
  }

  /**
   * A new tenant, with its first token unless `issueToken` is false (a
   * tenant whose callers all come with JWTs from a trusted issuer).
   */
  async create(
    t: { name: string; externalId?: string | null; scopes?: readonly TenantScope[]; issueToken?: boolean },
    by: ChangeBy,
  ): Promise<{ tenant: TenantView; token?: IssuedToken }> {
    return this.tenants.transaction(async (em) => {
      const tenant = await uniqueExternalId(() =>
        this.tenants.insertTenant(em, { id: randomUUID(), name: t.name, externalId: t.externalId ?? null }),
      );
      const token = t.issueToken === false ? undefined : await this.issue(em, tenant.id, t.scopes);
      await this.audit.record(em, {
        action: 'tenant.create',
        tenantId: tenant.id,
        detail: {
          name: t.name,
          ...(t.externalId ? { external_id: t.externalId } : {}),
          ...(token ? { token_id: token.id, token_prefix: token.prefix, scopes: token.scopes } : {}),
        },
        by,
      });
      return { tenant: tenantView(tenant), ...(token ? { token } : {}) };
    });
  }

  async list(limit = DEFAULT_PAGE_SIZE, cursor?: string): Promise<Page<TenantView>> {
    const after = decodeCursor(cursor, ['createdAt', 'id'] as const, {
      createdAt: CURSOR_FIELDS.timestamp,
      id: CURSOR_FIELDS.uuid,
    });
    const rows = await this.tenants.listTenants(limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(tenantView),
      next_cursor:
        rows.length > limit && last ? encodeCursor({ createdAt: last.createdAt.toISOString(), id: last.id }) : null,
    };
  }

  async get(id: string): Promise<TenantView> {
    return tenantView(await this.mustFind(id));
  }

  /** Disables or enables a tenant and/or sets its external id (null clears it). */
  async update(
    id: string,
    change: { disabled?: boolean; externalId?: string | null },
    by: ChangeBy,
  ): Promise<TenantView> {
    let disabledNow = false;
    let remapped = false;
    return this.revoking(
      async (em) => {
        let tenant = await this.mustFind(id, em);
        if (change.externalId !== undefined && change.externalId !== tenant.externalId) {
          const externalId = change.externalId;
          tenant = (await uniqueExternalId(() => this.tenants.setExternalId(em, id, externalId)))!;
          remapped = true;
          await this.audit.record(em, {
            action: 'tenant.external_id',
            tenantId: id,
            detail: { external_id: externalId },
            by,
          });
        }
        if (change.disabled !== undefined && change.disabled !== (tenant.disabledAt !== null)) {
          tenant = (await this.tenants.setDisabled(em, id, change.disabled))!;
          disabledNow = change.disabled;
          await this.audit.record(em, {
            action: change.disabled ? 'tenant.disable' : 'tenant.enable',
            tenantId: id,
            by,
          });
        }
        return tenantView(tenant);
      },
      // A new external id changes which JWTs map here: every replica drops the principals it has cached.
      (t) => [
        ...(disabledNow ? [{ kind: 'tenant_disabled' as const, tenantId: t.id }] : []),
        ...(remapped ? [{ kind: 'tenant_limits' as const, tenantId: t.id }] : []),
      ],
    );
  }

  /** Changes a tenant's quota overrides; in force on every replica when this answers. */
  async setLimits(
    id: string,
    dto: {
      sends_per_minute?: number | null;
      max_running_tasks?: number | null;
      max_open_streams?: number | null;
      tokens_per_day?: number | null;
      tokens_per_month?: number | null;
      cost_per_day?: number | null;
      cost_per_month?: number | null;
      requests_per_day?: number | null;
      requests_per_month?: number | null;
    },
    by: ChangeBy,
  ): Promise<TenantView> {
    const limits: Parameters<TenantRepository['setLimits']>[2] = {};
    const str = (v: number | null): string | null => (v === null ? null : String(v));
    if (dto.sends_per_minute !== undefined) limits.sendsPerMinute = dto.sends_per_minute;
    if (dto.max_running_tasks !== undefined) limits.maxRunningTasks = dto.max_running_tasks;
    if (dto.max_open_streams !== undefined) limits.maxOpenStreams = dto.max_open_streams;
    if (dto.tokens_per_day !== undefined) limits.tokensPerDay = str(dto.tokens_per_day);
    if (dto.tokens_per_month !== undefined) limits.tokensPerMonth = str(dto.tokens_per_month);
    if (dto.cost_per_day !== undefined) limits.costPerDay = str(dto.cost_per_day);
    if (dto.cost_per_month !== undefined) limits.costPerMonth = str(dto.cost_per_month);
    if (dto.requests_per_day !== undefined) limits.requestsPerDay = str(dto.requests_per_day);
    if (dto.requests_per_month !== undefined) limits.requestsPerMonth = str(dto.requests_per_month);
    return this.revoking(
      async (em) => {
        const tenant = await this.tenants.setLimits(em, this.checkId(id), limits);
        if (!tenant) throw DomainError.notFound('tenant');
        await this.audit.record(em, { action: 'tenant.limits', tenantId: id, detail: { ...dto }, by });
        return tenantView(tenant);
      },
      (t) => [{ kind: 'tenant_limits', tenantId: t.id }],
    );
  }

  /** Issues a new token and revokes every other one in one transaction. */
  async rotate(
    id: string,
    by: ChangeBy,
    scopes?: readonly TenantScope[],
  ): Promise<{ token: IssuedToken; revoked: string[] }> {
    return this.revoking(
      async (em) => {
        await this.mustFind(id, em);
        const token = await this.issue(em, id, scopes);
        const revoked = await this.tenants.revokeAllTokens(em, id, token.id);
        await this.audit.record(em, {
          action: 'token.rotate',
          tenantId: id,
          detail: { token_id: token.id, token_prefix: token.prefix, scopes: token.scopes, revoked_token_ids: revoked },
          by,
        });
        return { token, revoked };
      },
      (r) => r.revoked.map((tokenId) => ({ kind: 'token_revoked', tokenId })),
    );
  }

  /** An additional token, for rotating clients over without a gap. */
  async issueAdditional(id: string, by: ChangeBy, scopes?: readonly TenantScope[]): Promise<IssuedToken> {
    return this.tenants.transaction(async (em) => {
      await this.mustFind(id, em);
      const token = await this.issue(em, id, scopes);
      await this.audit.record(em, {
        action: 'token.create',
        tenantId: id,
        detail: { token_id: token.id, token_prefix: token.prefix, scopes: token.scopes },
        by,
      });
      return token;
    });
  }

  async revoke(id: string, tokenId: string, by: ChangeBy): Promise<TokenView> {
    return this.revoking(
      async (em) => {
        await this.mustFind(id, em);
        if (!UUID_PATTERN.test(tokenId) || !(await this.tenants.revokeToken(em, id, tokenId))) {
          throw DomainError.notFound('active token');
        }
        await this.audit.record(em, { action: 'token.revoke', tenantId: id, detail: { token_id: tokenId }, by });
        const token = await em.findOneByOrFail(TenantTokenEntity, { id: tokenId });
        return tokenView(token);
      },
      (t) => [{ kind: 'token_revoked', tokenId: t.id }],
    );
  }

  /** Records an operator action on a tenant's resources (outside the tenant lifecycle). */
  async recordAction(action: string, tenantId: string, detail: Record<string, unknown>, by: ChangeBy) {
    await this.tenants.transaction((em) => this.audit.record(em, { action, tenantId, detail, by }));
  }

  async listTokens(id: string): Promise<TokenView[]> {
    await this.mustFind(id);
    return (await this.tenants.listTokens(id)).map(tokenView);
  }

  async auditLog(limit: number, cursor: string | undefined, tenantId?: string): Promise<Page<AuditView>> {
    const before = decodeCursor(cursor, ['id'] as const, { id: CURSOR_FIELDS.bigint });
    const rows = await this.audit.list(limit + 1, { tenantId, beforeId: before?.id });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(auditView),
      next_cursor: rows.length > limit && last ? encodeCursor({ id: last.id }) : null,
    };
  }

  private async issue(
    em: Parameters<TenantRepository['insertToken']>[0],
    tenantId: string,
    scopes: readonly TenantScope[] = TENANT_SCOPES,
  ): Promise<IssuedToken> {
    const token = generateTenantToken();
    const row = await this.tenants.insertToken(em, {
      id: randomUUID(),
      tenantId,
      tokenHash: sha256Hex(token),
      prefix: tokenPrefix(token),
      scopes: TENANT_SCOPES.filter((s) => scopes.includes(s)),
    });
    return { ...tokenView(row), token };
  }

  private checkId(id: string): string {
    if (!UUID_PATTERN.test(id)) throw DomainError.notFound('tenant');
    return id;
  }

  private async mustFind(id: string, em?: Parameters<TenantRepository['findTenant']>[1]): Promise<TenantEntity> {
    const tenant = await this.tenants.findTenant(this.checkId(id), em);
    if (!tenant) throw DomainError.notFound('tenant');
    return tenant;
  }
}

/** Runs an insert or update that sets `external_id`; another tenant holding the value is a 409 that says so. */
async function uniqueExternalId<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const driver = (err as { driverError?: { code?: string; constraint?: string } }).driverError;
    if (driver?.code === '23505' && (driver.constraint ?? 'uq_tenants_external_id') === 'uq_tenants_external_id') {
      throw new DomainError('conflict', 'another tenant already has this external_id');
    }
    throw err;
  }
}
