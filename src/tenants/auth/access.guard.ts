import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { ACCESS_KEY, type Access, type TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { AppConfig } from '../../config/app-config.js';
import { AdminTokenService } from '../services/admin-token.service.js';
import { secretsEqual } from '../services/token-crypto.js';
import {
  ADMIN_STRATEGY,
  BearerAuthenticator,
  BearerRefusalError,
  TENANT_STRATEGY,
  type BearerStrategyName,
} from './bearer.strategies.js';

/** RFC 9110 §11.1: the scheme is case-insensitive, followed by one or more spaces or tabs (§11.4 token68). */
const BEARER_HEADER = /^bearer[ \t]+([A-Za-z0-9._~+/-]+=*)[ \t]*$/i;

/**
 * Turns passport's outcome into the principal or a 401. A strategy refusal
 * becomes its reason; any other error (the database is down …) propagates.
 */
function principalOrThrow<T>(err: unknown, user: T | false): T {
  if (err instanceof BearerRefusalError) {
    throw new DomainError(
      'unauthorized',
      err.reason === 'tenant_disabled' ? 'tenant is disabled' : 'invalid or revoked token',
    );
  }
  if (err instanceof Error) throw err;
  if (err) throw new Error('authentication failed unexpectedly');
  if (!user) throw new DomainError('unauthorized', 'invalid or revoked token');
  return user;
}

/**
 * Only the `Authorization: Bearer` header is accepted: passport-http-bearer
 * would also take `access_token` from the query string or body, which puts
 * secrets into URLs and logs.
 */
function requireBearerHeader(req: Request): void {
  const header = req.headers.authorization;
  if (!header) throw new DomainError('unauthorized', 'missing bearer token');
  const token = BEARER_HEADER.exec(header)?.[1];
  if (!token) throw new DomainError('unauthorized', 'malformed Authorization header; expected "Bearer <token>"');
  // passport-http-bearer splits on one space and nothing else: hand it the canonical form.
  req.headers.authorization = `Bearer ${token}`;
}

/** Runs a bearer strategy for the request and sets `req.user`, or throws the 401. */
@Injectable()
abstract class BearerGuard implements CanActivate {
  protected abstract readonly strategy: BearerStrategyName;
  constructor(private readonly bearer: BearerAuthenticator) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const http = ctx.switchToHttp();
    const req = http.getRequest<Request>();
    req.user = await this.verify(req, http.getResponse<Response>());
    return true;
  }

  /**
   * The principal of an `Authorization` header value, or the same 401/403 an
   * HTTP request would get: for the gRPC binding, whose bearer rides in the
   * call's metadata (spec §10.2). Only the header is read.
   */
  principalOf(authorization: string | undefined): Promise<TenantPrincipal | { admin: true }> {
    const req = { headers: authorization === undefined ? {} : { authorization } } as Request;
    return this.verify(req, {} as Response);
  }

  private async verify(req: Request, res: Response): Promise<TenantPrincipal | { admin: true }> {
    requireBearerHeader(req);
    const [err, user] = await this.bearer.authenticate(this.strategy, req, res);
    if (!user && (!err || (err instanceof BearerRefusalError && err.reason === 'invalid_token'))) {
      await this.refuseOtherScope(req, res);
    }
    return principalOrThrow(err, user);
  }

  /** A valid token of the other kind (admin on a tenant route, or the reverse) is a 403 that says so, not a 401. */
  private async refuseOtherScope(req: Request, res: Response): Promise<void> {
    const token = req.headers.authorization?.slice('Bearer '.length) ?? '';
    const other = this.strategy === TENANT_STRATEGY ? ADMIN_STRATEGY : TENANT_STRATEGY;
    // Only a token that looks like the other kind is looked up (no database read for random strings on admin routes).
    if (!token.startsWith(other === ADMIN_STRATEGY ? 'adm_' : 'atr_')) return;
    const [, valid] = await this.bearer.authenticate(other, req, res);
    if (!valid) return;
    throw new DomainError(
      'forbidden',
      other === ADMIN_STRATEGY
        ? 'this route needs a tenant token (atr_…); the admin token acts on /v1/admin only'
        : 'this route needs the admin token (adm_…); a tenant token was given',
    );
  }
}

/** Tenant routes: an active `atr_…` token of an enabled tenant. */
@Injectable()
export class TenantGuard extends BearerGuard {
  protected readonly strategy = TENANT_STRATEGY;
}

/** Admin routes: the operator's `adm_…` token. */
@Injectable()
export class AdminGuard extends BearerGuard {
  protected readonly strategy = ADMIN_STRATEGY;
}

/**
 * The global guard: every route is a tenant route unless marked `@Public()`,
 * `@AdminOnly()` or `@AnyToken()`, so a new route is never open by accident.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tenantGuard: TenantGuard,
    private readonly adminGuard: AdminGuard,
    private readonly admin: AdminTokenService,
    private readonly config: AppConfig,
  ) {}

  canActivate(ctx: ExecutionContext): Promise<boolean> | boolean {
    const access = this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [ctx.getHandler(), ctx.getClass()]);
    switch (access ?? 'tenant') {
      case 'public':
        return true;
      case 'admin':
        return this.adminGuard.canActivate(ctx);
      case 'tenant':
        return this.tenantGuard.canActivate(ctx);
      case 'any':
        return this.eitherGuard(ctx).canActivate(ctx);
      case 'scrape':
        return this.scrape(ctx);
    }
  }

  /** A metrics scrape: the scrape token (`ARBITER_METRICS_TOKEN`), else the admin token. */
  private scrape(ctx: ExecutionContext): boolean {
    const header = ctx.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const token = BEARER_HEADER.exec(header)?.[1];
    const scrape = this.config.metricsToken;
    if (token && (this.admin.verify(token) || (scrape !== undefined && secretsEqual(token, scrape)))) return true;
    throw new DomainError('unauthorized', 'the admin token or the metrics token (ARBITER_METRICS_TOKEN) is required');
  }

  /**
   * For a route open to both kinds of token, the token's prefix picks the guard that checks it: `adm_…` the
   * admin's, anything else a tenant's (which answers the same 401 as any tenant route for a bad one).
   */
  private eitherGuard(ctx: ExecutionContext): TenantGuard | AdminGuard {
    const header = ctx.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    return /^bearer[ \t]+adm_/i.test(header) ? this.adminGuard : this.tenantGuard;
  }
}
