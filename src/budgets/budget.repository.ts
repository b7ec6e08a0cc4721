import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { BUDGET_KEYS, limitsOfRow, ZERO_SPEND, type BudgetLimits, type PeriodSpend } from './budget-limits.js';

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
  requests_per_day: string | null;
  requests_per_month: string | null;
};

const ANY_LIMIT = `(${BUDGET_KEYS.map((k) => `${k} IS NOT NULL`).join(' OR ')})`;
const LIMITS = BUDGET_KEYS.join(', ');

interface SpendRow {
  agent_id: string;
  day_tokens: string | null;
  day_cost: string | null;
  day_requests: string | null;
  month_tokens: string | null;
  month_cost: string | null;
  month_requests: string | null;
}

const spendOf = (r: SpendRow | undefined): PeriodSpend =>
  r
    ? {
        day: {
          tokens: Number(r.day_tokens ?? 0),
          cost: Number(r.day_cost ?? 0),
          requests: Number(r.day_requests ?? 0),
        },
        month: {
          tokens: Number(r.month_tokens ?? 0),
          cost: Number(r.month_cost ?? 0),
          requests: Number(r.month_requests ?? 0),
        },
      }
    : ZERO_SPEND;

/**
 * The daily rollups a spend is read from, one row per tenant, agent and UTC day: the model calls' tokens and cost
 * (`usage_daily`, summed over providers and models) beside the messages taken (`usage_requests`). $1 the tenants,
 * $2 and $3 the month's range.
 */
const DAILY = `SELECT tenant_id, agent_id, bucket, sum(tokens) AS tokens, sum(cost) AS cost, sum(requests) AS requests,
         sum(calls) AS calls
    FROM (SELECT tenant_id, agent_id, bucket, input_tokens + output_tokens AS tokens, cost, 0 AS requests, calls
            FROM usage_daily WHERE tenant_id = ANY($1::uuid[]) AND bucket >= $2 AND bucket < $3
          UNION ALL
          SELECT tenant_id, agent_id, bucket, 0, 0, requests, 0
            FROM usage_requests WHERE tenant_id = ANY($1::uuid[]) AND bucket >= $2 AND bucket < $3) d
   GROUP BY tenant_id, agent_id, bucket`;

/**
 * Budgets and what was spent against them. Spend is read from the daily
 * usage rollup (`usage_daily`, keyed by tenant and day first) and the daily
 * request counts (`usage_requests`): a month is at most 31 rows per agent,
 * provider and model, whatever the number of calls.
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
    const rows: (SpendRow & { whose: string })[] = await this.ds.query(
      `SELECT w.whose, '' AS agent_id,
              sum(tokens) FILTER (WHERE bucket >= $4) AS day_tokens, sum(cost) FILTER (WHERE bucket >= $4) AS day_cost,
              sum(requests) FILTER (WHERE bucket >= $4) AS day_requests,
              sum(tokens) AS month_tokens, sum(cost) AS month_cost, sum(requests) AS month_requests
         FROM (${DAILY}) r, LATERAL (VALUES ('tenant'), (CASE WHEN r.agent_id = $5 THEN 'agent' END)) w(whose)
        WHERE w.whose IS NOT NULL GROUP BY w.whose`,
      [[tenantId], p.monthFrom, p.monthEnd, p.dayFrom, agentId],
    );
    return {
      tenant: spendOf(rows.find((r) => r.whose === 'tenant')),
      agent: spendOf(rows.find((r) => r.whose === 'agent')),
    };
  }

  /**
   * Each agent's spend this UTC day and month (the agents with usage this month: messages taken, model calls —
   * `called`), and the tenants' totals.
   */
  async spendByAgent(
    tenantIds: string[],
    p: { dayFrom: Date; monthFrom: Date; monthEnd: Date },
  ): Promise<Map<string, Map<string, PeriodSpend & { called: boolean }>>> {
    const rows: (SpendRow & { tenant_id: string; month_calls: string | null })[] = await this.ds.query(
      `SELECT tenant_id, agent_id, sum(calls) AS month_calls,
              sum(tokens) FILTER (WHERE bucket >= $4) AS day_tokens, sum(cost) FILTER (WHERE bucket >= $4) AS day_cost,
              sum(requests) FILTER (WHERE bucket >= $4) AS day_requests,
              sum(tokens) AS month_tokens, sum(cost) AS month_cost, sum(requests) AS month_requests
         FROM (${DAILY}) r GROUP BY tenant_id, agent_id ORDER BY tenant_id, agent_id`,
      [tenantIds, p.monthFrom, p.monthEnd, p.dayFrom],
    );
    const out = new Map<string, Map<string, PeriodSpend & { called: boolean }>>();
    for (const r of rows) {
      let m = out.get(r.tenant_id);
      if (!m) out.set(r.tenant_id, (m = new Map<string, PeriodSpend & { called: boolean }>()));
      m.set(r.agent_id, { ...spendOf(r), called: Number(r.month_calls ?? 0) > 0 });
    }
    return out;
  }

  async tenantName(tenantId: string): Promise<string | null> {
    const rows: { name: string }[] = await this.ds.query(`SELECT name FROM tenants WHERE id = $1`, [tenantId]);
    return rows[0]?.name ?? null;
  }

  async upsertAgent(em: EntityManager, tenantId: string, agentId: string, l: BudgetLimits): Promise<void> {
    await em.query(
      `INSERT INTO agent_budgets (tenant_id, agent_id, ${LIMITS}, updated_at)
       VALUES ($1, $2, ${BUDGET_KEYS.map((_, i) => `$${i + 3}`).join(', ')}, now())
       ON CONFLICT (tenant_id, agent_id) DO UPDATE SET
         ${BUDGET_KEYS.map((k) => `${k} = EXCLUDED.${k}`).join(', ')}, updated_at = now()`,
      [tenantId, agentId, ...BUDGET_KEYS.map((k) => l[k])],
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
