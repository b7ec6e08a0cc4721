import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { DEFAULT_PAGE_SIZE, type Page } from '../../common/pagination.dto.js';
import type { AuditEntryEntity } from '../entities/audit-entry.entity.js';
import { TenantTokenEntity } from '../entities/tenant-token.entity.js';
import type { TenantEntity } from '../entities/tenant.entity.js';
import { AuditRepository } from '../repositories/audit.repository.js';
import { TenantRepository } from '../repositories/tenant.repository.js';
import { TenantAuthService } from './tenant-auth.service.js';
import { OpenStreams, type AccessChange } from './open-streams.service.js';
import { generateTenantToken, sha256Hex, tokenPrefix } from './token-crypto.js';

export interface TenantView {
  id: string;
  name: string;
  disabled: boolean;
  disabled_at: string | null;
  /** Quota overrides (null = the deployment's default, 0 = unlimited). */
  limits: { sends_per_minute: number | null; max_running_tasks: number | null; max_open_streams: number | null };
  created_at: string;
  updated_at: string;
}

export interface TokenView {
  id: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

/** A freshly issued token: the only time the secret leaves the server. */
export interface IssuedToken extends TokenView {
  token: string;
}

export interface AuditView {
  id: string;
  actor: string;
  action: string;
  tenant_id: string | null;
  detail: Record<string, unknown>;
  request_id: string | null;
  created_at: string;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function tenantView(t: TenantEntity): TenantView {
  return {
    id: t.id,
    name: t.name,
    disabled: t.disabledAt !== null,
    disabled_at: iso(t.disabledAt),
    limits: {
      sends_per_minute: t.sendsPerMinute ?? null,
      max_running_tasks: t.maxRunningTasks ?? null,
      max_open_streams: t.maxOpenStreams ?? null,
    },
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  };
}

function tokenView(k: TenantTokenEntity): TokenView {
  return {
    id: k.id,
    prefix: k.prefix,
    created_at: k.createdAt.toISOString(),
    revoked_at: iso(k.revokedAt),
    last_used_at: iso(k.lastUsedAt),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
    for (const c of changes(result)) this.streams.apply(c);
    // Answer once the change is in force on every replica (their token caches dropped it).
    await heard;
    return result;
  }

  async create(name: string, requestId?: string): Promise<{ tenant: TenantView; token: IssuedToken }> {
    return this.tenants.transaction(async (em) => {
      const tenant = await this.tenants.insertTenant(em, { id: randomUUID(), name });
      const token = await this.issue(em, tenant.id);
      await this.audit.record(em, {
        action: 'tenant.create',
        tenantId: tenant.id,
        detail: { name, token_id: token.id, token_prefix: token.prefix },
        requestId,
      });
      return { tenant: tenantView(tenant), token };
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

  async setDisabled(id: string, disabled: boolean, requestId?: string): Promise<TenantView> {
    return this.revoking(
      async (em) => {
        const tenant = await this.tenants.setDisabled(em, this.checkId(id), disabled);
        if (!tenant) throw DomainError.notFound('tenant');
        await this.audit.record(em, {
          action: disabled ? 'tenant.disable' : 'tenant.enable',
          tenantId: id,
          requestId,
        });
        return tenantView(tenant);
      },
      (t) => (t.disabled ? [{ kind: 'tenant_disabled', tenantId: t.id }] : []),
    );
  }

  /** Changes a tenant's quota overrides; in force on every replica when this answers. */
  async setLimits(
    id: string,
    dto: { sends_per_minute?: number | null; max_running_tasks?: number | null; max_open_streams?: number | null },
    requestId?: string,
  ): Promise<TenantView> {
    const limits: Parameters<TenantRepository['setLimits']>[2] = {};
    if (dto.sends_per_minute !== undefined) limits.sendsPerMinute = dto.sends_per_minute;
    if (dto.max_running_tasks !== undefined) limits.maxRunningTasks = dto.max_running_tasks;
    if (dto.max_open_streams !== undefined) limits.maxOpenStreams = dto.max_open_streams;
    return this.revoking(
      async (em) => {
        const tenant = await this.tenants.setLimits(em, this.checkId(id), limits);
        if (!tenant) throw DomainError.notFound('tenant');
        await this.audit.record(em, { action: 'tenant.limits', tenantId: id, detail: { ...dto }, requestId });
        return tenantView(tenant);
      },
      (t) => [{ kind: 'tenant_limits', tenantId: t.id }],
    );
  }

  /** Issues a new token and revokes every other one in one transaction. */
  async rotate(id: string, requestId?: string): Promise<{ token: IssuedToken; revoked: string[] }> {
    return this.revoking(
      async (em) => {
        await this.mustFind(id, em);
        const token = await this.issue(em, id);
        const revoked = await this.tenants.revokeAllTokens(em, id, token.id);
        await this.audit.record(em, {
          action: 'token.rotate',
          tenantId: id,
          detail: { token_id: token.id, token_prefix: token.prefix, revoked_token_ids: revoked },
          requestId,
        });
        return { token, revoked };
      },
      (r) => r.revoked.map((tokenId) => ({ kind: 'token_revoked', tokenId })),
    );
  }

  /** An additional token, for rotating clients over without a gap. */
  async issueAdditional(id: string, requestId?: string): Promise<IssuedToken> {
    return this.tenants.transaction(async (em) => {
      await this.mustFind(id, em);
      const token = await this.issue(em, id);
      await this.audit.record(em, {
        action: 'token.create',
        tenantId: id,
        detail: { token_id: token.id, token_prefix: token.prefix },
        requestId,
      });
      return token;
    });
  }

  async revoke(id: string, tokenId: string, requestId?: string): Promise<TokenView> {
    return this.revoking(
      async (em) => {
        await this.mustFind(id, em);
        if (!UUID.test(tokenId) || !(await this.tenants.revokeToken(em, id, tokenId))) {
          throw DomainError.notFound('active token');
        }
        await this.audit.record(em, { action: 'token.revoke', tenantId: id, detail: { token_id: tokenId }, requestId });
        const token = await em.findOneByOrFail(TenantTokenEntity, { id: tokenId });
        return tokenView(token);
      },
      (t) => [{ kind: 'token_revoked', tokenId: t.id }],
    );
  }

  /** Records an operator action on a tenant's resources (outside the tenant lifecycle). */
  async recordAction(action: string, tenantId: string, detail: Record<string, unknown>, requestId?: string) {
    await this.tenants.transaction((em) => this.audit.record(em, { action, tenantId, detail, requestId }));
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
      items: page.map((a: AuditEntryEntity) => ({
        id: a.id,
        actor: a.actor,
        action: a.action,
        tenant_id: a.tenantId,
        detail: a.detail,
        request_id: a.requestId,
        created_at: a.createdAt.toISOString(),
      })),
      next_cursor: rows.length > limit && last ? encodeCursor({ id: last.id }) : null,
    };
  }

  private async issue(em: Parameters<TenantRepository['insertToken']>[0], tenantId: string): Promise<IssuedToken> {
    const token = generateTenantToken();
    const row = await this.tenants.insertToken(em, {
      id: randomUUID(),
      tenantId,
      tokenHash: sha256Hex(token),
      prefix: tokenPrefix(token),
    });
    return { ...tokenView(row), token };
  }

  private checkId(id: string): string {
    if (!UUID.test(id)) throw DomainError.notFound('tenant');
    return id;
  }

  private async mustFind(id: string, em?: Parameters<TenantRepository['findTenant']>[1]): Promise<TenantEntity> {
    const tenant = await this.tenants.findTenant(this.checkId(id), em);
    if (!tenant) throw DomainError.notFound('tenant');
    return tenant;
  }
}
