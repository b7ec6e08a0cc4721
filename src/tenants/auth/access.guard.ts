import { Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import {
  ACCESS_KEY,
  SCOPES_KEY,
  type Access,
  type Principal,
  type TenantPrincipal,
  type TenantScope,
} from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { requestLog } from '../../common/logging.js';
import { AppConfig } from '../../config/app-config.js';
import { secretsEqual } from '../services/token-crypto.js';
import { BearerAuthenticator, BearerRefusalError, type StrategyOutcome } from './bearer.strategies.js';

/** RFC 9110 §11.1: the scheme is case-insensitive, followed by one or more spaces or tabs (§11.4 token68). */
const BEARER_HEADER = /^bearer[ \t]+([A-Za-z0-9._~+/-]+=*)[ \t]*$/i;

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

/** Does this tenant credential hold one of the scopes? Else the 403 naming them. */
export function requireScope(principal: TenantPrincipal, accepted: readonly TenantScope[], what?: string): void {
  if (!accepted.some((s) => principal.scopes.includes(s))) throw DomainError.missingScope(accepted, what);
}

export const NEEDS_TENANT =
  "this route needs a tenant token (atr_…) or a tenant's JWT; an operator credential acts on /v1/admin only";
const NEEDS_OPERATOR = 'this route needs the admin token or another operator credential; a tenant credential was given';

/**
 * Verifies the request's bearer (any kind: `BearerAuthenticator`) and puts
 * the principal on the request, its actor on the request's log line. For
 * the A2A bindings, whose requests are not Nest's, `principalOf` does the
 * same for a header value.
 */
@Injectable()
export class BearerGuard {
  constructor(private readonly bearer: BearerAuthenticator) {}

  /**
   * The request's principal, or the 401/403 thrown: at once when the bearer was verified lately, else a
   * promise (so that a request whose token is known waits for nothing here).
   */
  principal(req: Request, res: Response): Principal | Promise<Principal> {
    requireBearerHeader(req);
    const outcome = this.bearer.authenticate(req);
    return outcome instanceof Promise ? outcome.then((o) => accepted(o, res)) : accepted(outcome, res);
  }

  /**
   * The principal of an `Authorization` header value, or the same 401/403 an
   * HTTP request would get: for the A2A bindings (gRPC's bearer rides in the
   * call's metadata, spec §10.2). Only the header is read.
   */
  principalOf(authorization: string | undefined): Principal | Promise<Principal> {
    const req = { headers: authorization === undefined ? {} : { authorization } } as Request;
    return this.principal(req, {} as Response);
  }

  /** A tenant principal of a header value, else the 401/403 (an operator's credential acts on /v1/admin only). */
  tenantOf(authorization: string | undefined): TenantPrincipal | Promise<TenantPrincipal> {
    const principal = this.principalOf(authorization);
    return principal instanceof Promise ? principal.then(tenantOnly) : tenantOnly(principal);
  }
}

/** The strategy's outcome as a principal (on the request's log line), or the refusal it stands for. */
function accepted([err, user]: StrategyOutcome, res: Response): Principal {
  if (err instanceof BearerRefusalError) {
    throw new DomainError(err.status === 403 ? 'forbidden' : 'unauthorized', err.message);
  }
  if (err instanceof Error) throw err;
  if (err) throw new Error('authentication failed unexpectedly');
  if (!user) throw new DomainError('unauthorized', 'invalid or revoked token');
  if (res.setHeader !== undefined) {
    const log = requestLog(res);
    log.actor = user.actor;
    if ('tenantId' in user) log.tenant_id = user.tenantId;
  }
  return user;
}

function tenantOnly(principal: Principal): TenantPrincipal {
  if (!('tenantId' in principal)) throw new DomainError('forbidden', NEEDS_TENANT);
  return principal;
}

/**
 * The global guard: every route is a tenant route unless marked `@Public()`,
 * `@AdminOnly()`, `@AnyToken()` or `@ScrapeToken()`, and a tenant route
 * must name its scopes (`@RequireScope`) or it refuses every caller — so a
 * new route is never open by accident.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  private readonly logger = new Logger('AccessGuard');

  constructor(
    private readonly reflector: Reflector,
    private readonly bearer: BearerGuard,
    private readonly config: AppConfig,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const access = this.reflector.getAllAndOverride<Access | undefined>(ACCESS_KEY, [ctx.getHandler(), ctx.getClass()]);
    if (access === 'public') return true;
    const http = ctx.switchToHttp();
    const req = http.getRequest<Request>();
    if (access === 'scrape' && this.scrapeToken(req)) return true;
    const principal = await this.bearer.principal(req, http.getResponse<Response>());
    req.user = principal;
    switch (access ?? 'tenant') {
      case 'any':
        return true;
      case 'admin':
      case 'scrape':
        return this.operator(principal, req);
      case 'tenant':
        return this.tenant(principal, ctx);
    }
  }

  private operator(principal: Principal, req: Request): boolean {
    if (!('admin' in principal)) throw new DomainError('forbidden', NEEDS_OPERATOR);
    const reading = req.method === 'GET' || req.method === 'HEAD';
    if (!reading && principal.role !== 'admin') {
      throw new DomainError('forbidden', 'the auditor role may only read; this change needs the admin role');
    }
    return true;
  }

  private tenant(principal: Principal, ctx: ExecutionContext): boolean {
    if (!('tenantId' in principal)) throw new DomainError('forbidden', NEEDS_TENANT);
    const scopes = this.reflector.getAllAndOverride<TenantScope[] | undefined>(SCOPES_KEY, [
      ctx.getHandler(),
      ctx.getClass(),
    ]);
    if (!scopes?.length) {
      this.logger.error(`${ctx.getClass().name}.${ctx.getHandler().name} declares no scope; refused`);
      throw new DomainError('forbidden', 'this route declares no scope, so no credential may call it');
    }
    requireScope(principal, scopes);
    return true;
  }

  /** The scrape token (`ARBITER_METRICS_TOKEN`), which is no principal's. */
  private scrapeToken(req: Request): boolean {
    const token = BEARER_HEADER.exec(req.headers.authorization ?? '')?.[1];
    const scrape = this.config.metricsToken;
    return token !== undefined && scrape !== undefined && secretsEqual(token, scrape);
  }
}
