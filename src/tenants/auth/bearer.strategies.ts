import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { Strategy as BearerStrategy, type VerifyFunction } from 'passport-http-bearer';
import type { Principal } from '../../common/auth.decorators.js';
import { BearerRefusalError } from './bearer-refusal.js';
import { JwtPrincipals } from '../identity/jwt-principals.service.js';
import { OperatorTokens } from '../services/operator-tokens.service.js';
import { TenantAuthService } from '../services/tenant-auth.service.js';

export { BearerRefusalError } from './bearer-refusal.js';

/** Three base64url segments: the compact form of a JWS (a JWT). */
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** What passport gives a strategy for one request: the strategy's outcome, reported once. */
interface StrategyRun {
  authenticate(req: Request, options?: object): void;
  success(user: Principal): void;
  fail(): void;
  error(err: unknown): void;
  pass(): void;
  redirect(): void;
}

/**
 * One passport-http-bearer strategy for every credential, run the way
 * passport's `authenticate` runs a strategy (an object made from it per
 * request, given `success`, `fail`, `error`), without passport's middleware
 * around it: a guard needs the outcome, not a middleware chain, and
 * passport's instance is process-wide state (two applications in one
 * process would share strategies). The token's form picks who verifies it:
 * `atr_…` a tenant's opaque token, `adm_…` an operator's (the root one or
 * a named one), and a compact JWS a JWT access token from a trusted issuer.
 */
@Injectable()
export class BearerAuthenticator {
  private readonly strategy: BearerStrategy<VerifyFunction>;

  constructor(
    private readonly tenants: TenantAuthService,
    private readonly operators: OperatorTokens,
    private readonly jwts: JwtPrincipals,
  ) {
    this.strategy = new BearerStrategy((token, done) => {
      this.resolve(token).then(
        (principal) => done(null, principal),
        (err: unknown) => done(err),
      );
    });
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

  /** The strategy's outcome for this request: `[error, user]` (user false: no valid token). */
  authenticate(req: Request): Promise<[unknown, Principal | false]> {
    return new Promise((resolve) => {
      const run = Object.create(this.strategy) as StrategyRun;
      run.success = (user) => resolve([null, user]);
      run.fail = () => resolve([null, false]);
      run.error = (err) => resolve([err, false]);
      // A bearer strategy neither passes nor redirects: either would be a failure to authenticate.
      run.pass = () => resolve([null, false]);
      run.redirect = () => resolve([null, false]);
      run.authenticate(req, { session: false });
    });
  }
}
