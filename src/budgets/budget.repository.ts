import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { limitsOfRow, ZERO_SPEND, type BudgetLimits, type PeriodSpend } from './budget-limits.js';

/** A tenant's budgets as stored: its own limits (null: none) and its agents'. */
export interface TenantBudgets {
  tenantId: string;
  tenantName: string;
  tenant: BudgetLimits | null;
  agents: Map<string, BudgetLimits>;
}

type LimitRow = {
  tokens_per_day: string | null;
  tokens_per_month: string | null;
  cost_per_day: string | null;
  cost_per_month: string | null;
};

const ANY_LIMIT = `(tokens_per_day IS NOT NULL OR tokens_per_month IS NOT NULL OR cost_per_day IS NOT NULL
  OR cost_per_month IS NOT NULL)`;
const LIMITS = 'tokens_per_day, tokens_per_month, cost_per_day, cost_per_month';

interface SpendRow {
  agent_id: string;
  day_tokens: string | null;
  day_cost: string | null;
  month_tokens: string | null;
  month_cost: string | null;
}

const spendOf = (r: SpendRow | undefined): PeriodSpend =>
  r
    ? {
        day: { tokens: Number(r.day_tokens ?? 0), cost: Number(r.day_cost ?? 0) },
        month: { tokens: Number(r.month_tokens ?? 0), cost: Number(r.month_cost ?? 0) },
      }
    : ZERO_SPEND;

/**
 * Budgets and what was spent against them. Spend is read from the daily
 * usage rollup (`usage_daily`, keyed by tenant and day first): a month is at
 * most 31 rows per agent, provider and model, whatever the number of calls.
 */
@Injectable()
export class BudgetRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  transaction<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(work);
  }

  /** Every tenant with a budget of its own or of one of its agents (`tenantId`: that tenant only). */
  async load(tenantId?: string): Promise<Map<string, TenantBudgets>> {
    const out = new Map<string, TenantBudgets>();
    const tenants: (LimitRow & { id: string; name: string })[] = await this.ds.query(
      `SELECT id, name, ${LIMITS} FROM tenants
        WHERE ${tenantId ? 'id = $1' : `${ANY_LIMIT} OR id IN (SELECT tenant_id FROM agent_budgets)`}`,
      tenantId ? [tenantId] : [],
    );
    for (const t of tenants) {
      const own = limitsOfRow(t);
      out.set(t.id, {
        tenantId: t.id,
        tenantName: t.name,
        tenant: Object.values(own).some((v) => v !== null) ? own : null,
        agents: new Map(),
      });
    }
    const agents: (LimitRow & { tenant_id: string; agent_id: string })[] = await this.ds.query(
      `SELECT tenant_id, agent_id, ${LIMITS} FROM agent_budgets ${tenantId ? 'WHERE tenant_id = $1' : ''}`,
      tenantId ? [tenantId] : [],
    );
    for (const a of agents) out.get(a.tenant_id)?.agents.set(a.agent_id, limitsOfRow(a));
    for (const [id, b] of out) if (!b.tenant && b.agents.size === 0) out.delete(id);
    return out;
  }

  /** The tenant's spend this UTC day and month, and `agentId`'s: one indexed read of the daily rollup. */
  async spend(
    tenantId: string,
    agentId: string,
    p: { dayFrom: Date; monthFrom: Date; monthEnd: Date },
  ): Promise<{ tenant: PeriodSpend; agent: PeriodSpend }> {
    const rows: (SpendRow & {
      a_day_tokens: string | null;
      a_day_cost: string | null;
      a_month_tokens: string | null;
      a_month_cost: string | null;
    })[] = await this.ds.query(
      `SELECT '' AS agent_id,
                sum(input_tokens + output_tokens) FILTER (WHERE bucket >= $2) AS day_tokens,
                sum(cost) FILTER (WHERE bucket >= $2) AS day_cost,
                sum(input_tokens + output_tokens) AS month_tokens, sum(cost) AS month_cost,
                sum(input_tokens + output_tokens) FILTER (WHERE bucket >= $2 AND agent_id = $5) AS a_day_tokens,
                sum(cost) FILTER (WHERE bucket >= $2 AND agent_id = $5) AS a_day_cost,
                sum(input_tokens + output_tokens) FILTER (WHERE agent_id = $5) AS a_month_tokens,
                sum(cost) FILTER (WHERE agent_id = $5) AS a_month_cost
           FROM usage_daily WHERE tenant_id = $1 AND bucket >= $3 AND bucket < $4`,
      [tenantId, p.dayFrom, p.monthFrom, p.monthEnd, agentId],
    );
    const r = rows[0];
    return {
      tenant: spendOf(r),
      agent: spendOf(
        r && {
          agent_id: agentId,
          day_tokens: r.a_day_tokens,
          day_cost: r.a_day_cost,
          month_tokens: r.a_month_tokens,
          month_cost: r.a_month_cost,
        },
      ),
    };
  }

  /** Each agent's spend this UTC day and month (the agents with usage this month), and the tenants' totals. */
  async spendByAgent(
    tenantIds: string[],
    p: { dayFrom: Date; monthFrom: Date; monthEnd: Date },
  ): Promise<Map<string, Map<string, PeriodSpend>>> {
    const rows: (SpendRow & { tenant_id: string })[] = await this.ds.query(
      `SELECT tenant_id, agent_id,
              sum(input_tokens + output_tokens) FILTER (WHERE bucket >= $2) AS day_tokens,
              sum(cost) FILTER (WHERE bucket >= $2) AS day_cost,
              sum(input_tokens + output_tokens) AS month_tokens, sum(cost) AS month_cost
         FROM usage_daily WHERE tenant_id = ANY($1::uuid[]) AND bucket >= $3 AND bucket < $4
        GROUP BY tenant_id, agent_id ORDER BY tenant_id, agent_id`,
      [tenantIds, p.dayFrom, p.monthFrom, p.monthEnd],
    );
    const out = new Map<string, Map<string, PeriodSpend>>();
    for (const r of rows) {
      let m = out.get(r.tenant_id);
      if (!m) out.set(r.tenant_id, (m = new Map<string, PeriodSpend>()));
      m.set(r.agent_id, spendOf(r));
    }
    return out;
  }

  async tenantName(tenantId: string): Promise<string | null> {
    const rows: { name: string }[] = await this.ds.query(`SELECT name FROM tenants WHERE id = $1`, [tenantId]);
    return rows[0]?.name ?? null;
  }

  async upsertAgent(em: EntityManager, tenantId: string, agentId: string, l: BudgetLimits): Promise<void> {
    await em.query(
      `INSERT INTO agent_budgets (tenant_id, agent_id, ${LIMITS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, now())
       ON CONFLICT (tenant_id, agent_id) DO UPDATE SET tokens_per_day = EXCLUDED.tokens_per_day,
         tokens_per_month = EXCLUDED.tokens_per_month, cost_per_day = EXCLUDED.cost_per_day,
         cost_per_month = EXCLUDED.cost_per_month, updated_at = now()`,
      [tenantId, agentId, l.tokens_per_day, l.tokens_per_month, l.cost_per_day, l.cost_per_month],
    );
  }

  async deleteAgent(em: EntityManager, tenantId: string, agentId: string): Promise<boolean> {
    const rows: { n: number }[] = await em.query(
      `WITH d AS (DELETE FROM agent_budgets WHERE tenant_id = $1 AND agent_id = $2 RETURNING agent_id)
       SELECT count(*)::int AS n FROM d`,
      [tenantId, agentId],
    );
    return (rows[0]?.n ?? 0) > 0;
  }

  /** Records a threshold crossing once per budget and period; true when this call recorded it. */
  async markThreshold(
    em: EntityManager,
    t: { tenantId: string; agentId: string; budget: string; periodStart: Date; used: number },
  ): Promise<boolean> {
    const rows: { n: number }[] = await em.query(
      `WITH i AS (INSERT INTO budget_thresholds (tenant_id, agent_id, budget, period_start, used)
                  VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING tenant_id)
       SELECT count(*)::int AS n FROM i`,
      [t.tenantId, t.agentId, t.budget, t.periodStart, t.used],
    );
    return (rows[0]?.n ?? 0) > 0;
  }
}
