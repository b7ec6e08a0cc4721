import { Injectable, Logger } from '@nestjs/common';
import { safeError } from '../../common/safe-error.js';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { TenantRepository } from '../repositories/tenant.repository.js';
import { sha256Hex, TENANT_TOKEN_PATTERN } from './token-crypto.js';

export type TenantAuthResult =
  { ok: true; principal: TenantPrincipal } | { ok: false; reason: 'invalid_token' | 'tenant_disabled' };

/**
 * Resolves a presented bearer token to its tenant. No cache: a rotation,
 * revocation or disable is in force from the very next request, on every
 * replica.
 */
@Injectable()
export class TenantAuthService {
  private readonly logger = new Logger('TenantAuth');

  constructor(private readonly tenants: TenantRepository) {}

  async authenticate(token: string): Promise<TenantAuthResult> {
    if (!TENANT_TOKEN_PATTERN.test(token)) return { ok: false, reason: 'invalid_token' };
    const hit = await this.tenants.lookupActiveToken(sha256Hex(token));
    if (!hit) return { ok: false, reason: 'invalid_token' };
    if (hit.tenantDisabledAt) return { ok: false, reason: 'tenant_disabled' };
    if (!hit.lastUsedAt || Date.now() - hit.lastUsedAt.getTime() > 60_000) {
      this.tenants.touchToken(hit.tokenId).catch((err: unknown) => {
        this.logger.warn({ err: safeError(err) }, 'could not record token use');
      });
    }
    return { ok: true, principal: { tenantId: hit.tenantId, tenantName: hit.tenantName, tokenId: hit.tokenId } };
  }
}
