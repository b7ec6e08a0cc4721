import { Injectable, Logger } from '@nestjs/common';
import { safeError } from '../common/safe-error.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../metrics/metrics.service.js';
import { AuditLog } from '../tenants/services/audit-log.service.js';
import type { AccountedCall } from '../usage/usage-call.js';
import { UsageMeter } from '../usage/usage-meter.js';
import { periodOf, periods, ratios, type BudgetKey, type BudgetLimits, type PeriodSpend } from './budget-limits.js';
import { BudgetRepository } from './budget.repository.js';
import { Budgets } from './budget.service.js';
import { BudgetViews, type BudgetUse } from './budget-views.service.js';

/**
 * The soft threshold (`ARBITER_BUDGET_WARN_PERCENT`): once calls are
 * accounted (committed) here, or a message is taken, the tenant's budgets are read again, off the
 * request path; a budget whose spend reached the threshold is recorded once
 * per period over every replica (a row in `budget_thresholds`, unique per
 * budget and period, with its audit row `budget.threshold`) and counted.
 */
@Injectable()
export class BudgetThresholds {
  private readonly logger = new Logger('Budgets');
  /** Crossings recorded (here or, as the database said, elsewhere): `tenant|agent|budget|period`. */
  private readonly crossed = new Set<string>();
  /** Tenants whose check is running, and whether calls came in meanwhile. */
  private readonly checking = new Map<string, boolean>();

  constructor(
    private readonly repo: BudgetRepository,
    private readonly budgets: Budgets,
    private readonly views: BudgetViews,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly audit: AuditLog,
    meter: UsageMeter,
  ) {
    meter.onAccounted((tenantId, calls) => this.accounted(tenantId, calls));
  }

  /** Calls committed here: checks the tenant's budgets against the soft threshold, off the request path. */
  private accounted(tenantId: string, _calls: readonly AccountedCall[]): void {
    if (this.budgets.cached(tenantId) === null) return;
    if (this.checking.has(tenantId)) {
      this.checking.set(tenantId, true);
      return;
    }
    this.checking.set(tenantId, false);
    void (async () => {
      try {
        do {
          this.checking.set(tenantId, false);
          await this.thresholds(tenantId);
        } while (this.checking.get(tenantId));
      } catch (err) {
        this.logger.warn({ err: safeError(err), tenantId }, 'could not check budget thresholds');
      } finally {
        this.checking.delete(tenantId);
      }
    })();
  }

  /** Settles once no threshold check is running (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.checking.size) await new Promise((r) => setTimeout(r, 10));
  }

  private async thresholds(tenantId: string): Promise<void> {
    const b = await this.budgets.budgetsOf(tenantId);
    if (!b) return;
    const view = (await this.views.of([{ id: tenantId, budgets: b }])).get(tenantId)!;
    const w = periods();
    const m = this.metrics;
    const tenant = m.tenant(tenantId);
    const entries: { agent: string; limits: BudgetLimits; spend: PeriodSpend }[] = [];
    if (b.tenant) entries.push({ agent: '', limits: b.tenant, spend: spendOfUse(view.tenant) });
    for (const a of view.agents) {
      const limits = b.agents.get(a.agent);
      if (limits) entries.push({ agent: a.agent, limits, spend: spendOfUse(a) });
    }
    const warn = this.config.budgetWarnPercent / 100;
    for (const e of entries) {
      const agent = e.agent ? m.agent(e.agent) : '';
      for (const r of ratios(e.limits, e.spend)) {
        m.budgetUsedRatio.set({ tenant, agent, budget: r.key }, r.ratio);
        if (r.ratio < warn) continue;
        await this.crossing(tenantId, e.agent, r.key, w[periodOf(r.key)].from, r.used, e.limits[r.key]!, agent);
      }
    }
  }

  private async crossing(
    tenantId: string,
    agentId: string,
    key: BudgetKey,
    periodStart: Date,
    used: number,
    limit: number,
    agentLabel: string,
  ): Promise<void> {
    const id = `${tenantId}|${agentId}|${key}|${periodStart.toISOString()}`;
    if (this.crossed.has(id)) return;
    const recorded = await this.repo.transaction(async (em) => {
      const first = await this.repo.markThreshold(em, { tenantId, agentId, budget: key, periodStart, used });
      if (first) {
        await this.audit.record(em, {
          action: 'budget.threshold',
          tenantId,
          detail: {
            ...(agentId ? { agent_id: agentId } : {}),
            budget: key,
            limit,
            used,
            percent: this.config.budgetWarnPercent,
            period_start: periodStart.toISOString(),
          },
          by: { actor: 'system' },
        });
      }
      return first;
    });
    if (this.crossed.size > 100_000) this.crossed.clear();
    this.crossed.add(id);
    if (recorded)
      this.metrics.budgetThresholdCrossings.inc({
        tenant: this.metrics.tenant(tenantId),
        agent: agentLabel,
        budget: key,
      });
  }
}

const spendOfUse = (u: BudgetUse): PeriodSpend => ({
  day: { tokens: u.used.day.tokens, cost: u.used.day.cost, requests: u.used.day.requests },
  month: { tokens: u.used.month.tokens, cost: u.used.month.cost, requests: u.used.month.requests },
});
