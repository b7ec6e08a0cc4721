import { applyDecorators, createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { requestIdOf } from './errors.js';
import type { SubjectToken } from './subject-token.js';

export const ACCESS_KEY = 'arbiter:access';
export type Access = 'public' | 'admin' | 'tenant' | 'any' | 'scrape';

/** Open route: no bearer token needed (health, the well-known card stub). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'public');
/** Operator route: an operator credential (auditors: reads only). */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'admin');
/** A route for any credential (a tenant's or an operator's), such as `GET /v1/me`. */
export const AnyToken = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'any');

/** A metrics scrape: an operator's `adm_…` token, or the scrape token `ARBITER_METRICS_TOKEN`. */
export const ScrapeToken = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'scrape');

/** What a tenant credential may do; every tenant route declares the scopes it accepts. */
export const TENANT_SCOPES = ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'] as const;
export type TenantScope = (typeof TENANT_SCOPES)[number];
/** Operator roles: `admin` may do everything on `/v1/admin`, `auditor` read it. */
export const OPERATOR_ROLES = ['admin', 'auditor'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

export const isTenantScope = (s: string): s is TenantScope => (TENANT_SCOPES as readonly string[]).includes(s);

export const SCOPES_KEY = 'arbiter:scopes';
/**
 * The tenant scopes a route accepts (any one of them is enough). A tenant
 * route without this is refused to every caller (fail closed), and a test
 * walks every route for it.
 */
export const RequireScope = (...scopes: [TenantScope, ...TenantScope[]]): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(SCOPES_KEY, scopes));

/** Who a request is from: a tenant's credential, or an operator's. */
export type Principal = TenantPrincipal | OperatorPrincipal;

/**
 * The actor id audit rows and log lines name: `root` (the break-glass admin
 * token), `operator:<name>`, `token:<prefix>` (an opaque tenant token) or
 * `jwt:<iss>|<sub>` (+ `|<client>` when the client differs from the subject).
 */
export type ActorId = string;

/** The authenticated tenant behind a tenant route. */
export interface TenantPrincipal {
  tenantId: string;
  tenantName: string;
  /** The opaque token's id, or `jwt:<hash>` for a JWT (as held streams are keyed). */
  tokenId: string;
  /** The opaque token's public prefix (as in token listings); for a JWT, its issuer's id. */
  tokenPrefix: string;
  /** The tenant's quota overrides (null = the deployment's default, 0 = unlimited). */
  limits?: TenantLimits;
  scopes: readonly TenantScope[];
  actor: ActorId;
  /** A JWT's: the trusted issuer's id and when the token expires (ms since the epoch). */
  jwt?: { issuerId: string; expiresAt: number };
  /**
   * A JWT's raw token, for outbound calls on the caller's behalf (token exchange). A non-enumerable property whose
   * value hides the token from JSON and logs (`SubjectToken`): spreading or serialising the principal drops it.
   */
  readonly subject?: SubjectToken;
}

/** An operator: the root token, a named operator token, or an IdP's JWT with an operator role. */
export interface OperatorPrincipal {
  admin: true;
  role: OperatorRole;
  actor: ActorId;
  /** A named operator token's id (revocation ends what it holds). */
  operatorId?: string;
  jwt?: { issuerId: string; expiresAt: number };
}

export interface TenantLimits {
  sendsPerMinute: number | null;
  maxRunningTasks: number | null;
  maxOpenStreams: number | null;
}

/** The caller of an `@AnyToken()` route (or any authenticated route). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<Request & { user?: Principal }>();
  if (!req.user) throw new Error('CurrentPrincipal used on a route without auth');
  return req.user;
});

export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantPrincipal => {
  const req = ctx.switchToHttp().getRequest<Request & { user?: TenantPrincipal }>();
  if (!req.user || !('tenantId' in req.user)) throw new Error('CurrentTenant used on a route without tenant auth');
  return req.user;
});

/** Who made a change, for its audit row: the actor and the request. */
export interface ChangeBy {
  actor: ActorId;
  requestId?: string;
}

/** The `ChangeBy` of the request behind an authenticated route. */
export const ChangedBy = createParamDecorator((_: unknown, ctx: ExecutionContext): ChangeBy => {
  return changeBy(ctx.switchToHttp().getRequest<Request & { user?: Principal }>());
});

/** The `ChangeBy` of an authenticated request. */
export function changeBy(req: Request & { user?: Principal }): ChangeBy {
  if (!req.user) throw new Error('ChangedBy used on a route without auth');
  const requestId = requestIdOf(req);
  return { actor: req.user.actor, ...(requestId ? { requestId } : {}) };
}
