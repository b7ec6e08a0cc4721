import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import passport from 'passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import type { Principal } from '../../common/auth.decorators.js';
import { BearerRefusalError } from './bearer-refusal.js';
import { JwtPrincipals } from '../identity/jwt-principals.service.js';
import { OperatorTokens } from '../services/operator-tokens.service.js';
import { TenantAuthService } from '../services/tenant-auth.service.js';

export const BEARER_STRATEGY = 'bearer';

export { BearerRefusalError } from './bearer-refusal.js';

/** Three base64url segments: the compact form of a JWS (a JWT). */
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * One passport-http-bearer strategy for every credential, on a passport
 * instance of this application's own (the `passport` module's default
 * instance is process-wide: two applications in one process would share
 * strategies). The token's form picks who verifies it: `atr_…` a tenant's
 * opaque token, `adm_…` an operator's (the root one or a named one), and a
 * compact JWS a JWT access token from a trusted issuer.
 */
@Injectable()
export class BearerAuthenticator {
  private readonly passport = new passport.Passport();

  constructor(
    private readonly tenants: TenantAuthService,
    private readonly operators: OperatorTokens,
    private readonly jwts: JwtPrincipals,
  ) {
    this.passport.use(
      BEARER_STRATEGY,
      new BearerStrategy((token, done) => {
        this.resolve(token).then(
          (principal) => done(null, principal),
          (err: unknown) => done(err),
        );
      }),
    );
  }

  /** The principal of a token, or a `BearerRefusalError`. */
  private async resolve(token: string): Promise<Principal> {
    if (token.startsWith('atr_')) {
      const r = await this.tenants.authenticate(token);
      if (r.ok) return r.principal;
      throw new BearerRefusalError(r.reason === 'tenant_disabled' ? 'tenant is disabled' : 'invalid or revoked token');
    }
    if (token.startsWith('adm_')) {
      const operator = await this.operators.authenticate(token);
      if (operator) return operator;
      throw new BearerRefusalError('invalid or revoked token');
    }
    if (JWS_COMPACT.test(token) || token.split('.').length === 5) return this.jwts.authenticate(token);
    throw new BearerRefusalError('invalid or revoked token');
  }

  /** The strategy's outcome for this request: `[error, user]` as passport reports them (user false: no valid token). */
  authenticate(req: Request, res: Response): Promise<[unknown, Principal | false]> {
    return new Promise((resolve, reject) => {
      const middleware = this.passport.authenticate(
        BEARER_STRATEGY,
        { session: false },
        (err: unknown, user: Principal | false) => resolve([err, user]),
      ) as (req: Request, res: Response, next: (err?: unknown) => void) => void;
      middleware(req, res, (err?: unknown) =>
        err ? reject(err instanceof Error ? err : new Error('authentication failed')) : resolve([undefined, false]),
      );
    });
  }
}
