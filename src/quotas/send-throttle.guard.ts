import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { Request } from 'express';
import type { TenantPrincipal } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { AppConfig } from '../config/app-config.js';
import { PgThrottlerStorage } from './pg-throttler.storage.js';
import { SEND_WINDOW_MS, sendKey } from './quota.service.js';
import { Metrics } from '../metrics/metrics.service.js';

const principalOf = (ctx: ExecutionContext): TenantPrincipal | undefined =>
  ctx.switchToHttp().getRequest<Request & { user?: TenantPrincipal }>().user;

/**
 * `@nestjs/throttler`'s guard on the native send routes (`/v1/orchestrate`,
 * chat, conversation messages): the tenant's send budget, keyed by tenant
 * (not route), in the storage the A2A bindings count in too, with the
 * `X-RateLimit-*` headers. Runs after the bearer guard, which names the tenant.
 */
@Injectable()
export class SendThrottleGuard extends ThrottlerGuard {
  // Explicit tokens: the base class's own @Inject metadata would otherwise be inherited.
  constructor(
    @Inject(PgThrottlerStorage) storage: PgThrottlerStorage,
    @Inject(Reflector) reflector: Reflector,
    @Inject(AppConfig) config: AppConfig,
    @Inject(Metrics) private readonly metrics: Metrics,
  ) {
    const limitOf = (ctx: ExecutionContext): number =>
      principalOf(ctx)?.limits?.sendsPerMinute ?? config.tenantSendsPerMinute;
    super(
      {
        throttlers: [{ name: 'default', ttl: SEND_WINDOW_MS, limit: limitOf, skipIf: (ctx) => !limitOf(ctx) }],
        getTracker: (req: Record<string, unknown>) => (req as { user: TenantPrincipal }).user.tenantId,
        generateKey: (_ctx, tracker) => sendKey(tracker),
      },
      storage,
      reflector,
    );
    void this.onModuleInit();
  }

  protected override throwThrottlingException(
    _ctx: ExecutionContext,
    detail: { limit: number; timeToBlockExpire: number },
  ): Promise<void> {
    this.metrics.quotaRefusals.inc({ kind: 'sends' });
    throw DomainError.rateLimited(
      `send quota reached: ${detail.limit} messages per minute for this tenant; retry in ${detail.timeToBlockExpire} s`,
      detail.timeToBlockExpire,
    );
  }
}
