import { Injectable } from '@nestjs/common';
import type { TenantPrincipal } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { AppConfig } from '../config/app-config.js';
import { PgThrottlerStorage } from './pg-throttler.storage.js';
import { UsageService } from './usage.service.js';
import { Metrics } from '../metrics/metrics.service.js';

/** The send quota's window. */
export const SEND_WINDOW_MS = 60_000;
/** The throttler key of a tenant's sends: one budget for every surface and replica. */
export const sendKey = (tenantId: string): string => `send:${tenantId}`;

/**
 * Per-tenant quotas (docs/operating.md, "Quotas"): sends per minute, tasks running at
 * once, streams open at once. Each limit is the tenant's override or the
 * deployment's default; 0 is unlimited. Refusals are `rate_limited`
 * (HTTP 429 with `Retry-After`; on A2A a retryable error). Reads, cancels,
 * subscriptions to a task and health are never counted against sends.
 */
@Injectable()
export class QuotaService {
  constructor(
    private readonly storage: PgThrottlerStorage,
    private readonly usage: UsageService,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  sendsPerMinute(p: TenantPrincipal): number {
    return p.limits?.sendsPerMinute ?? this.config.tenantSendsPerMinute;
  }

  /** Counts one send (a new message on any surface) against the tenant's per-minute budget. */
  /** Counts a send against the tenant's quota, or throws the 429; nothing to wait for when there is no quota. */
  takeSend(p: TenantPrincipal): Promise<void> | undefined {
    const limit = this.sendsPerMinute(p);
    return limit ? this.countSend(p, limit) : undefined;
  }

  private async countSend(p: TenantPrincipal, limit: number): Promise<void> {
    const r = await this.storage.increment(sendKey(p.tenantId), SEND_WINDOW_MS, limit);
    if (r.isBlocked) {
      this.metrics.quotaRefusals.inc({ kind: 'sends' });
      throw DomainError.rateLimited(
        `send quota reached: ${limit} messages per minute for this tenant; retry in ${r.timeToBlockExpire} s`,
        r.timeToBlockExpire,
      );
    }
  }

  /**
   * Runs `create` (which creates a task and holds its run) if the tenant is
   * under its running-task cap; until `create` calls `held` (its run is in the
   * run registry, which counts it from then) or returns, the new task counts
   * already, so concurrent sends on this replica cannot all slip under the cap.
   */
  /** The tenant's running-task cap (0: none): its override, else the deployment's default. */
  runningCap(p: TenantPrincipal): number {
    return p.limits?.maxRunningTasks ?? this.config.tenantMaxRunningTasks;
  }

  admitRun<T>(p: TenantPrincipal, create: (held: () => void, cap: number) => Promise<T>): Promise<T> {
    const cap = this.runningCap(p);
    // This replica's own count refuses at once, without a round trip; the creation's statement decides the rest.
    if (cap && this.usage.runningHere(p.tenantId) >= cap) {
      this.metrics.quotaRefusals.inc({ kind: 'running' });
      return Promise.reject(
        DomainError.rateLimited(
          `running-task cap reached: this tenant may run ${cap} tasks at once; retry when one has finished`,
          1,
        ),
      );
    }
    this.usage.admit(p.tenantId, 1);
    let admitted = true;
    const held = (): void => {
      if (!admitted) return;
      admitted = false;
      this.usage.admit(p.tenantId, -1);
    };
    let creating: Promise<T>;
    try {
      creating = create(held, cap);
    } catch (err) {
      held();
      throw err;
    }
    // One reaction for both outcomes (not an async function awaiting it: a frame and an await fewer per send).
    return creating.then(
      (created) => {
        held();
        return created;
      },
      (err: unknown) => {
        held();
        // The database holds the cap exactly, over every replica: what this replica's count let through may not fit.
        if (err instanceof DomainError && err.code === 'rate_limited')
          this.metrics.quotaRefusals.inc({ kind: 'running' });
        throw err;
      },
    );
  }

  /** Holds a stream slot for the tenant until the returned release is called (idempotent). */
  openStream(p: TenantPrincipal): () => void {
    const cap = p.limits?.maxOpenStreams ?? this.config.tenantMaxOpenStreams;
    if (cap && this.usage.of(p.tenantId).streams >= cap) {
      this.metrics.quotaRefusals.inc({ kind: 'streams' });
      throw DomainError.rateLimited(
        `open-stream cap reached: this tenant may hold ${cap} streams open at once; close one or retry later`,
        1,
      );
    }
    this.usage.stream(p.tenantId, 1);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.usage.stream(p.tenantId, -1);
    };
  }
}
