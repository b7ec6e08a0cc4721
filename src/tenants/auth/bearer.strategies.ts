import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import passport from 'passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { AdminTokenService } from '../services/admin-token.service.js';
import { TenantAuthService } from '../services/tenant-auth.service.js';

export const TENANT_STRATEGY = 'tenant-bearer';
export const ADMIN_STRATEGY = 'admin-bearer';
export type BearerStrategyName = typeof TENANT_STRATEGY | typeof ADMIN_STRATEGY;

/** Why a bearer was refused; carried to the guard as the strategy's error. */
export interface BearerRefusal {
  reason: 'invalid_token' | 'tenant_disabled';
}

export class BearerRefusalError extends Error {
  constructor(readonly reason: BearerRefusal['reason']) {
    super(reason);
    this.name = 'BearerRefusalError';
  }
}

/**
 * passport-http-bearer strategies for `atr_…` tenant tokens and the
 * operator's `adm_…` token, on a passport instance of this application's
 * own. (The `passport` module's default instance is process-wide: two
 * applications in one process — tests, an embedding — registering strategies
 * under the same names would verify each other's tokens.)
 */
@Injectable()
export class BearerAuthenticator {
  private readonly passport = new passport.Passport();

  constructor(tenants: TenantAuthService, admin: AdminTokenService) {
    this.passport.use(
      TENANT_STRATEGY,
      new BearerStrategy((token, done) => {
        tenants.authenticate(token).then(
          (r) => (r.ok ? done(null, r.principal) : done(new BearerRefusalError(r.reason))),
          (err: unknown) => done(err),
        );
      }),
    );
    this.passport.use(
      ADMIN_STRATEGY,
      // Constant-time compare in AdminTokenService.
      new BearerStrategy((token, done) =>
        admin.verify(token) ? done(null, { admin: true }) : done(new BearerRefusalError('invalid_token')),
      ),
    );
  }

  /** The strategy's outcome for this request: `[error, user]` as passport reports them (user false: no valid token). */
  authenticate(
    name: BearerStrategyName,
    req: Request,
    res: Response,
  ): Promise<[unknown, TenantPrincipal | { admin: true } | false]> {
    return new Promise((resolve, reject) => {
      const middleware = this.passport.authenticate(
        name,
        { session: false },
        (err: unknown, user: TenantPrincipal | { admin: true } | false) => resolve([err, user]),
      ) as (req: Request, res: Response, next: (err?: unknown) => void) => void;
      middleware(req, res, (err?: unknown) =>
        err ? reject(err instanceof Error ? err : new Error('authentication failed')) : resolve([undefined, false]),
      );
    });
  }
}
