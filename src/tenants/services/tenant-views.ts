import type { AuditEntryEntity } from '../entities/audit-entry.entity.js';
import type { TenantTokenEntity } from '../entities/tenant-token.entity.js';
import type { TenantEntity } from '../entities/tenant.entity.js';

export interface TenantView {
  id: string;
  name: string;
  /** What a trusted issuer's tenant claim names this tenant by (null: none). */
  external_id: string | null;
  disabled: boolean;
  disabled_at: string | null;
  /** Quota overrides (null = the deployment's default, 0 = unlimited). */
  limits: {
    sends_per_minute: number | null;
    max_running_tasks: number | null;
    max_open_streams: number | null;
    /** Budgets (docs/budgets.md): null = none. */
    tokens_per_day: number | null;
    tokens_per_month: number | null;
    cost_per_day: number | null;
    cost_per_month: number | null;
    requests_per_day: number | null;
    requests_per_month: number | null;
  };
  created_at: string;
  updated_at: string;
}

export interface TokenView {
  id: string;
  prefix: string;
  /** What the token may do. */
  scopes: string[];
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
  /** `admin` (an operator's change) or `tenant` (a tenant credential acting on its own resources). */
  actor: string;
  /** Who exactly: `root`, `operator:<name>`, `jwt:<iss>|<sub>[|<client>]` or `token:<prefix>`. */
  actor_id: string | null;
  action: string;
  tenant_id: string | null;
  detail: Record<string, unknown>;
  request_id: string | null;
  created_at: string;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const num = (v: string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

export function tenantView(t: TenantEntity): TenantView {
  return {
    id: t.id,
    name: t.name,
    external_id: t.externalId ?? null,
    disabled: t.disabledAt !== null,
    disabled_at: iso(t.disabledAt),
    limits: {
      sends_per_minute: t.sendsPerMinute ?? null,
      max_running_tasks: t.maxRunningTasks ?? null,
      max_open_streams: t.maxOpenStreams ?? null,
      tokens_per_day: num(t.tokensPerDay),
      tokens_per_month: num(t.tokensPerMonth),
      cost_per_day: num(t.costPerDay),
      cost_per_month: num(t.costPerMonth),
      requests_per_day: num(t.requestsPerDay),
      requests_per_month: num(t.requestsPerMonth),
    },
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  };
}

export function tokenView(k: TenantTokenEntity): TokenView {
  return {
    id: k.id,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    revoked_at: iso(k.revokedAt),
    last_used_at: iso(k.lastUsedAt),
  };
}

export function auditView(a: AuditEntryEntity): AuditView {
  return {
    id: a.id,
    actor: a.actor,
    actor_id: a.actorId,
    action: a.action,
    tenant_id: a.tenantId,
    detail: a.detail,
    request_id: a.requestId,
    created_at: a.createdAt.toISOString(),
  };
}
