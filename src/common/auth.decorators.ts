import { createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

export const ACCESS_KEY = 'arbiter:access';
export type Access = 'public' | 'admin' | 'tenant';

/** Open route: no bearer token needed (health, the well-known card stub). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'public');
/** Admin route: the `adm_…` token only. */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_KEY, 'admin');

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

export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantPrincipal => {
  const req = ctx.switchToHttp().getRequest<Request & { user?: TenantPrincipal }>();
  if (!req.user || !('tenantId' in req.user)) throw new Error('CurrentTenant used on a route without tenant auth');
  return req.user;
});
