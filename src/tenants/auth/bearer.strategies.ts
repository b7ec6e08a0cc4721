import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { AdminTokenService } from '../services/admin-token.service.js';
import { TenantAuthService } from '../services/tenant-auth.service.js';

export const TENANT_STRATEGY = 'tenant-bearer';
export const ADMIN_STRATEGY = 'admin-bearer';

/** Why a bearer was refused; carried to the guard as passport's `info`. */
export interface BearerRefusal {
  reason: 'invalid_token' | 'tenant_disabled';
}

/** passport-http-bearer strategy for `atr_…` tenant tokens. */
@Injectable()
export class TenantBearerStrategy extends PassportStrategy(Strategy, TENANT_STRATEGY) {
  constructor(private readonly auth: TenantAuthService) {
    super();
  }

  async validate(token: string): Promise<TenantPrincipal> {
    const result = await this.auth.authenticate(token);
    if (!result.ok) throw new BearerRefusalError(result.reason);
    return result.principal;
  }
}

/** passport-http-bearer strategy for the operator's `adm_…` token (constant-time compare). */
@Injectable()
export class AdminBearerStrategy extends PassportStrategy(Strategy, ADMIN_STRATEGY) {
  constructor(private readonly admin: AdminTokenService) {
    super();
  }

  validate(token: string): { admin: true } {
    if (!this.admin.verify(token)) throw new BearerRefusalError('invalid_token');
    return { admin: true };
  }
}

export class BearerRefusalError extends Error {
  constructor(readonly reason: BearerRefusal['reason']) {
    super(reason);
    this.name = 'BearerRefusalError';
  }
}
