import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { Strategy as BearerStrategy, type VerifyFunction } from 'passport-http-bearer';
import type { Principal } from '../../common/auth.decorators.js';
import { BearerRefusalError } from './bearer-refusal.js';
import { JwtPrincipals } from '../identity/jwt-principals.service.js';
import { OperatorTokens } from '../services/operator-tokens.service.js';
import { TenantAuthService, type TenantAuthResult } from '../services/tenant-auth.service.js';

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
      let principal: Principal | Promise<Principal>;
      try {
        principal = this.resolve(token);
      } catch (err) {
        return done(err);
      }
      if (!(principal instanceof Promise)) return done(null, principal);
      principal.then(
        (p) => done(null, p),
        (err: unknown) => done(err),
      );
    });
  }

  /**
   * The principal of a token, or a `BearerRefusalError` (thrown, or the promise's rejection). A tenant token
   * verified lately is answered at once, without a promise: most requests' tokens were.
   */
  private resolve(token: string): Principal | Promise<Principal> {
    if (token.startsWith('atr_')) {
      const now = this.tenants.cached(token);
      return now ? tenantPrincipal(now) : this.tenants.authenticate(token).then(tenantPrincipal);
    }
    return this.resolveOther(token);
  }

  private async resolveOther(token: string): Promise<Principal> {
    if (token.startsWith('adm_')) {
      const operator = await this.operators.authenticate(token);
      if (operator) return operator;
      throw new BearerRefusalError('invalid or revoked token');
    }
    if (JWS_COMPACT.test(token) || token.split('.').length === 5) return this.jwts.authenticate(token);
    throw new BearerRefusalError('invalid or revoked token');
  }

  /**
   * The strategy's outcome for this request: `[error, user]` (user false: no valid token) — at once when the
   * strategy decided at once (a token verified lately), else a promise of it.
   */
  authenticate(req: Request): StrategyOutcome | Promise<StrategyOutcome> {
    let outcome: StrategyOutcome | undefined;
    let settle: ((o: StrategyOutcome) => void) | undefined;
    const decide = (o: StrategyOutcome): void => {
      if (settle) settle(o);
      else outcome ??= o;
    };
    const run = Object.create(this.strategy) as StrategyRun;
    run.success = (user) => decide([null, user]);
    run.fail = () => decide([null, false]);
    run.error = (err) => decide([err, false]);
    // A bearer strategy neither passes nor redirects: either would be a failure to authenticate.
    run.pass = () => decide([null, false]);
    run.redirect = () => decide([null, false]);
    run.authenticate(req, { session: false });
    return outcome ?? new Promise((resolve) => (settle = resolve));
  }
}

export type StrategyOutcome = [unknown, Principal | false];

function tenantPrincipal(r: TenantAuthResult): Principal {
  if (r.ok) return r.principal;
  throw new BearerRefusalError(r.reason === 'tenant_disabled' ? 'tenant is disabled' : 'invalid or revoked token');
}
