import { createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

export const ACCESS_KEY = 'arbiter:access';
export type Access = 'public' | 'admin' | 'tenant' | 'any' | 'scrape';

/** Open route: no bearer token needed (health, the well-known card stub). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'public');
/** Admin route: the `adm_…` token only. */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'admin');
/** A route for either kind of token (a tenant's `atr_…` or the admin `adm_…`), such as `GET /v1/me`. */
export const AnyToken = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'any');

/** A metrics scrape: the admin `adm_…` token, or the scrape token `ARBITER_METRICS_TOKEN`. */
export const ScrapeToken = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'scrape');

/** Who a request is from: the admin, or a tenant's token. */
export type Principal = TenantPrincipal | { admin: true };

/** The authenticated tenant behind a tenant route. */
export interface TenantPrincipal {
  tenantId: string;
  tenantName: string;
  tokenId: string;
  /** The token's public prefix (as in token listings), named in audit rows. */
  tokenPrefix: string;
  /** The tenant's quota overrides (null = the deployment's default, 0 = unlimited). */
  limits?: TenantLimits;
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
