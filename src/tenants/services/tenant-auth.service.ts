import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { safeError } from '../../common/safe-error.js';
import { isTenantScope, type TenantPrincipal } from '../../common/auth.decorators.js';
import { ReplicaCache } from '../../database/replica-cache.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TenantRepository } from '../repositories/tenant.repository.js';
import { ACCESS_CHANNEL } from './open-streams.service.js';
import { sha256Hex, TENANT_TOKEN_PATTERN } from './token-crypto.js';

export type TenantAuthResult =
  { ok: true; principal: TenantPrincipal } | { ok: false; reason: 'invalid_token' | 'tenant_disabled' };

/** How long a verified token is served from memory at most (access changes drop it at once). */
const TOKEN_TTL_MS = 60_000;
/** `last_used_at` is written at most this often per token, off the request path. */
const TOUCH_EVERY_MS = 60_000;

interface Verified {
  principal: TenantPrincipal;
  touchedAt: number;
  /** The answer served for it (one object, not one per request). */
  answer: TenantAuthResult;
}

const INVALID: TenantAuthResult = { ok: false, reason: 'invalid_token' };

/**
 * Resolves a presented bearer token to its tenant. Verified tokens are kept
 * in memory (by hash), and every access change — a revocation, a rotation,
 * a disabled tenant — drops them on every replica: the change is announced
 * over the replica channel in the transaction that makes it, and the admin
 * request answers only once every replica has applied the notice. Only
 * good tokens are kept; a refused one is looked up every time.
 */
@Injectable()
export class TenantAuthService implements OnModuleInit {
  private readonly logger = new Logger('TenantAuth');
  private readonly verified: ReplicaCache<Verified>;

  constructor(
    private readonly tenants: TenantRepository,
    private readonly channel: ReplicaChannel,
  ) {
    this.verified = new ReplicaCache(channel, TOKEN_TTL_MS);
  }

  onModuleInit(): void {
    this.channel.listenApplied(ACCESS_CHANNEL, () => this.forget());
  }

  /** Drops every verified token (an access change was committed here or announced by another replica). */
  forget(): void {
    this.verified.clear();
  }

  /**
   * The answer for a token verified lately, or for one that cannot be a token, without waiting (most requests:
   * their token was verified by an earlier one); undefined when it must be looked up (`authenticate`).
   */
  cached(token: string): TenantAuthResult | undefined {
    return TENANT_TOKEN_PATTERN.test(token) ? this.known(sha256Hex(token)) : INVALID;
  }

  async authenticate(token: string): Promise<TenantAuthResult> {
    if (!TENANT_TOKEN_PATTERN.test(token)) return INVALID;
    const hash = sha256Hex(token);
    const now = this.known(hash);
    if (now) return now;
    const generation = this.verified.begin();
    const hit = await this.tenants.lookupActiveToken(hash);
    if (!hit) return INVALID;
    if (hit.tenantDisabledAt) return { ok: false, reason: 'tenant_disabled' };
    const principal: TenantPrincipal = {
      tenantId: hit.tenantId,
      tenantName: hit.tenantName,
      tokenId: hit.tokenId,
      tokenPrefix: hit.tokenPrefix,
      limits: hit.limits,
      scopes: hit.scopes.filter(isTenantScope),
      actor: `token:${hit.tokenPrefix}`,
    };
    const entry: Verified = { principal, touchedAt: hit.lastUsedAt?.getTime() ?? 0, answer: { ok: true, principal } };
    this.touch(entry);
    this.verified.set(hash, entry, generation);
    return entry.answer;
  }

  /** The answer for a verified token's hash, if it is in memory. */
  private known(hash: string): TenantAuthResult | undefined {
    const entry = this.verified.get(hash);
    if (!entry) return undefined;
    this.touch(entry);
    return entry.answer;
  }

  private touch(entry: Verified): void {
    const now = Date.now();
    if (now - entry.touchedAt <= TOUCH_EVERY_MS) return;
    entry.touchedAt = now;
    this.tenants.touchToken(entry.principal.tokenId).catch((err: unknown) => {
      this.logger.warn({ err: safeError(err) }, 'could not record token use');
    });
  }
}
