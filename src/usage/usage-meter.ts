import { Injectable } from '@nestjs/common';
import { Metrics } from '../metrics/metrics.service.js';
import { callCost, type AccountedCall } from './usage-call.js';

/**
 * Counts accounted calls in the Prometheus usage counters, once their statement has committed, and tells its
 * listeners of them and of messages taken.
 */
@Injectable()
export class UsageMeter {
  private readonly listeners: ((tenantId: string, calls: readonly AccountedCall[]) => void)[] = [];

  constructor(private readonly metrics: Metrics) {}

  /** Calls `listener` with every tenant's calls once they are accounted (committed), on this replica. */
  onAccounted(listener: (tenantId: string, calls: readonly AccountedCall[]) => void): void {
    this.listeners.push(listener);
  }

  /** A message taken for one of the tenant's agents (counted by its statement): the listeners hear of it, no calls. */
  requested(tenantId: string): void {
    for (const l of this.listeners) l(tenantId, []);
  }

  record(tenantId: string, calls: readonly AccountedCall[] | null): void {
    if (!calls) return;
    for (const l of this.listeners) l(tenantId, calls);
    const m = this.metrics;
    const tenant = m.tenant(tenantId);
    for (const c of calls) {
      const labels = { tenant, agent: m.agent(c.agent), model: m.model(`${c.provider}/${c.model}`) };
      m.usageTokens.inc({ ...labels, kind: 'input' }, c.input);
      m.usageTokens.inc({ ...labels, kind: 'output' }, c.output);
      if (c.cached) m.usageTokens.inc({ ...labels, kind: 'cached' }, c.cached);
      if (c.currency) m.usageCost.inc({ ...labels, currency: c.currency }, callCost(c));
    }
  }
}
