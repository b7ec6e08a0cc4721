import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors.js';
import { AppConfig } from '../config/app-config.js';
import { Prices } from '../usage/prices.service.js';
import { NO_LIMITS, periods, ZERO_SPEND, type BudgetLimits, type PeriodSpend } from './budget-limits.js';
import { BudgetRepository, type TenantBudgets } from './budget.repository.js';

/** What was used in one period, as the budget views answer it. */
export interface PeriodUse {
  tokens: number;
  cost: number;
  /** Messages sent (new tasks and continuations). */
  requests: number;
  from: string;
  resets_at: string;
}
export interface BudgetUse {
  limits: BudgetLimits;
  used: { day: PeriodUse; month: PeriodUse };
}
export interface TenantBudgetsView {
  tenant: BudgetUse;
  agents: ({ agent: string } & BudgetUse)[];
}

export interface BudgetsHeader {
  currency: string | null;
  warn_at_percent: number;
}
/** `GET /v1/budgets`: one tenant's budgets and use. */
export type TenantBudgetsAnswer = BudgetsHeader & TenantBudgetsView;
/** `GET /v1/admin/budgets` without `tenant`: every tenant with a budget. */
export type AllBudgetsAnswer = BudgetsHeader & {
  tenants: ({ tenant_id: string; tenant_name: string } & TenantBudgetsView)[];
};

export type Window = ReturnType<typeof periods>;
/** The rollup range of a window: from the day's and the month's start to the month's end. */
export const windowOf = (w: Window) => ({ dayFrom: w.day.from, monthFrom: w.month.from, monthEnd: w.month.resetsAt });

/**
 * The budget reads (`GET /v1/budgets`, `GET /v1/admin/budgets`): each
 * tenant's and agent's limits beside what it used this UTC day and month,
 * read from the database (not from any replica's memory).
 */
@Injectable()
export class BudgetViews {
  constructor(
    private readonly repo: BudgetRepository,
    private readonly prices: Prices,
    private readonly config: AppConfig,
  ) {}

  use(limits: BudgetLimits, spend: PeriodSpend, w: Window): BudgetUse {
    const p = (k: 'day' | 'month'): PeriodUse => ({
      tokens: spend[k].tokens,
      cost: spend[k].cost,
      requests: spend[k].requests,
      from: w[k].from.toISOString(),
      resets_at: w[k].resetsAt.toISOString(),
    });
    return { limits: { ...limits }, used: { day: p('day'), month: p('month') } };
  }

  get header(): BudgetsHeader {
    return { currency: this.prices.currency, warn_at_percent: this.config.budgetWarnPercent };
  }

  /** Each tenant's budgets and use (tenants with none are given with no limits). */
  async of(tenants: { id: string; budgets: TenantBudgets | null }[]): Promise<Map<string, TenantBudgetsView>> {
    const w = periods();
    const spend = tenants.length
      ? await this.repo.spendByAgent(
          tenants.map((t) => t.id),
          windowOf(w),
        )
      : new Map<string, Map<string, PeriodSpend & { called: boolean }>>();
    const out = new Map<string, TenantBudgetsView>();
    for (const { id, budgets } of tenants) {
      const byAgent = spend.get(id) ?? new Map<string, PeriodSpend & { called: boolean }>();
      const total: PeriodSpend = {
        day: { tokens: 0, cost: 0, requests: 0 },
        month: { tokens: 0, cost: 0, requests: 0 },
      };
      for (const s of byAgent.values()) {
        for (const k of ['day', 'month'] as const) {
          total[k].tokens += s[k].tokens;
          total[k].cost += s[k].cost;
          total[k].requests += s[k].requests;
        }
      }
      for (const k of ['day', 'month'] as const) total[k].cost = Number(total[k].cost.toFixed(12));
      // Listed: the agents with a budget, or with model calls this month (messages alone count in the totals).
      const called = [...byAgent].filter(([, s]) => s.called).map(([agent]) => agent);
      const agents = [...new Set([...(budgets?.agents.keys() ?? []), ...called])].sort();
      out.set(id, {
        tenant: this.use(budgets?.tenant ?? NO_LIMITS, total, w),
        agents: agents.map((agent) => ({
          agent,
          ...this.use(budgets?.agents.get(agent) ?? NO_LIMITS, byAgent.get(agent) ?? ZERO_SPEND, w),
        })),
      });
    }
    return out;
  }

  /** `GET /v1/budgets`: the tenant's budgets and what it and its agents used this UTC day and month. */
  async tenantView(tenantId: string): Promise<TenantBudgetsAnswer> {
    const b = (await this.repo.load(tenantId)).get(tenantId) ?? null;
    const v = (await this.of([{ id: tenantId, budgets: b }])).get(tenantId)!;
    return { ...this.header, ...v };
  }

  /** `GET /v1/admin/budgets`: one tenant's (with its id), or every tenant with a budget. */
  async adminView(tenantId?: string): Promise<AllBudgetsAnswer | ({ tenant_id: string } & TenantBudgetsAnswer)> {
    if (tenantId) {
      const name = await this.repo.tenantName(tenantId);
      if (name === null) throw DomainError.notFound('tenant');
      return { tenant_id: tenantId, ...(await this.tenantView(tenantId)) };
    }
    return this.allTenants();
  }

  /** Every tenant with a budget of its own or of an agent, by name. */
  async allTenants(): Promise<AllBudgetsAnswer> {
    const all = await this.repo.load();
    const list = [...all.values()].sort(
      (a, b) => a.tenantName.localeCompare(b.tenantName) || a.tenantId.localeCompare(b.tenantId),
    );
    const views = await this.of(list.map((b) => ({ id: b.tenantId, budgets: b })));
    return {
      ...this.header,
      // `tenant_id`, as with `?tenant=`: `tenant` is the tenant's own budget and use, as in every other form.
      tenants: list.map((b) => ({ tenant_id: b.tenantId, tenant_name: b.tenantName, ...views.get(b.tenantId)! })),
    };
  }
}
