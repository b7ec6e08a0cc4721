import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { BudgetViews, type AllBudgetsAnswer, type TenantBudgetsAnswer } from '../budgets/budget-views.service.js';
import { Params } from '../database/sql-params.js';
import { UsageReports, type UsageRow } from '../usage/usage-reports.service.js';
import { addInto, quantile, type Histogram } from './histogram.js';
import { StatsRecorder } from './stats-recorder.service.js';
import { intervalOf, spanOf, type Span, type WindowName } from './stats-windows.js';

/** How long an answer is reused for the same tenant and window on this replica. */
export const CACHE_MS = 5_000;
const CACHE_MAX = 1_000;

export interface Latency {
  p50: number | null;
  p95: number | null;
}

export interface TaskCounts {
  started: number;
  completed: number;
  failed: number;
  canceled: number;
  input_required: number;
}

export interface A2aErrorCount {
  binding: string;
  code: string;
  count: number;
}

export interface StatsInterval extends TaskCounts {
  start: string;
  first_event: Latency;
  duration: Latency;
  a2a_errors: A2aErrorCount[];
}

export interface UsageSlice {
  key: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

export interface StatsReport {
  window: WindowName;
  from: string;
  to: string;
  interval_seconds: number;
  tenant_id: string | null;
  intervals: StatsInterval[];
  totals: TaskCounts & { first_event: Latency; duration: Latency; a2a_errors: number };
  a2a_errors: A2aErrorCount[];
  usage: { from: string; to: string; currency: string | null; by_agent: UsageSlice[]; by_model: UsageSlice[] };
  /**
   * Budget use this UTC day and month, as the budgets routes answer it: for one tenant, `GET /v1/budgets`'s
   * answer (its limits and use, and each agent's); across tenants, `GET /v1/admin/budgets`'s (`tenants`).
   */
  budgets: TenantBudgetsAnswer | AllBudgetsAnswer;
}

const COUNTS = ['started', 'completed', 'failed', 'canceled', 'input_required'] as const;
const zero = (): TaskCounts => ({ started: 0, completed: 0, failed: 0, canceled: 0, input_required: 0 });
const latencyOf = (h: Histogram): Latency => ({ p50: round(quantile(h, 0.5)), p95: round(quantile(h, 0.95)) });
const round = (s: number | null): number | null => (s === null ? null : Math.round(s * 1000) / 1000);
const HOUR = 3_600_000;

/**
 * The overview's figures over a window, from the stats tables (every
 * replica's counts) and the usage rollups: task outcomes, run-time
 * percentiles from the summed histograms, and A2A errors, per interval and
 * over the window; tokens and cost by agent and by model over the window's
 * hours; budget use per agent against its limits (the budget views, this
 * UTC day and month). Each (tenant, window) answer is kept `CACHE_MS` on
 * this replica.
 */
@Injectable()
export class StatsReports {
  private readonly cache = new Map<string, { at: number; answer: Promise<StatsReport> }>();

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly usage: UsageReports,
    private readonly recorder: StatsRecorder,
    private readonly budgetViews: BudgetViews,
  ) {}

  /** The report for `tenantId` (undefined: every tenant's), cached briefly. */
  report(window: WindowName, tenantId: string | undefined, now = Date.now()): Promise<StatsReport> {
    const key = `${tenantId ?? '*'}|${window}`;
    const hit = this.cache.get(key);
    if (hit && now - hit.at < CACHE_MS) return hit.answer;
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    const answer = this.build(window, tenantId, now);
    this.cache.set(key, { at: now, answer });
    answer.catch(() => this.cache.delete(key));
    return answer;
  }

  private async build(window: WindowName, tenantId: string | undefined, now: number): Promise<StatsReport> {
    // This replica's own counts are written first, so its answer includes them.
    await this.recorder.flush();
    const span = spanOf(window, now);
    const [tasks, latency, errors, usage, budgets] = await Promise.all([
      this.tasks(span, tenantId),
      this.latency(span, tenantId),
      this.errors(span, tenantId),
      this.usageOf(span, tenantId),
      tenantId ? this.budgetViews.tenantView(tenantId) : this.budgetViews.allTenants(),
    ]);
    const intervals: StatsInterval[] = Array.from({ length: span.count }, (_, i) => ({
      start: new Date(span.from + i * span.step).toISOString(),
      ...zero(),
      first_event: { p50: null, p95: null },
      duration: { p50: null, p95: null },
      a2a_errors: [],
    }));
    const totals = zero();
    for (const r of tasks) {
      const i = intervalOf(span, new Date(r.t).getTime());
      if (i < 0) continue;
      for (const c of COUNTS) {
        intervals[i][c] += Number(r[c]);
        totals[c] += Number(r[c]);
      }
    }
    const hist = { first_event: new Map<number, Histogram>(), duration: new Map<number, Histogram>() };
    const all = { first_event: new Map() as Histogram, duration: new Map() as Histogram };
    for (const r of latency) {
      const i = intervalOf(span, new Date(r.t).getTime());
      const kind = r.kind === 'first_event' ? 'first_event' : 'duration';
      if (i < 0) continue;
      const h = hist[kind].get(i) ?? new Map<number, number>();
      h.set(Number(r.slot), (h.get(Number(r.slot)) ?? 0) + Number(r.n));
      hist[kind].set(i, h);
    }
    for (const kind of ['first_event', 'duration'] as const) {
      for (const [i, h] of hist[kind]) {
        intervals[i][kind] = latencyOf(h);
        addInto(all[kind], h);
      }
    }
    const byCode = new Map<string, A2aErrorCount>();
    let errorTotal = 0;
    for (const r of errors) {
      const i = intervalOf(span, new Date(r.t).getTime());
      if (i < 0) continue;
      const n = Number(r.n);
      intervals[i].a2a_errors.push({ binding: r.binding, code: r.code, count: n });
      const key = `${r.binding}\n${r.code}`;
      const sum = byCode.get(key) ?? { binding: r.binding, code: r.code, count: 0 };
      sum.count += n;
      byCode.set(key, sum);
      errorTotal += n;
    }
    return {
      window,
      from: new Date(span.from).toISOString(),
      to: new Date(span.to).toISOString(),
      interval_seconds: span.step / 1000,
      tenant_id: tenantId ?? null,
      intervals,
      totals: {
        ...totals,
        first_event: latencyOf(all.first_event),
        duration: latencyOf(all.duration),
        a2a_errors: errorTotal,
      },
      a2a_errors: [...byCode.values()].sort((a, b) => b.count - a.count),
      usage,
      budgets,
    };
  }

  private where(span: Span, tenantId: string | undefined, p: Params): string {
    const w = [`grain = ${p.add(span.grain)}`, `bucket >= ${p.add(new Date(span.from))}`];
    w.push(`bucket < ${p.add(new Date(span.to))}`);
    if (tenantId) w.push(`tenant_id = ${p.add(tenantId)}`);
    return w.join(' AND ');
  }

  /** The rows' period start, cut down to the interval (so the database sums at most `span.count` groups). */
  private interval(span: Span, p: Params): string {
    const step = p.add(span.step / 1000);
    return `to_timestamp(floor(extract(epoch FROM bucket) / ${step}) * ${step})`;
  }

  private tasks(span: Span, tenantId: string | undefined) {
    const p = new Params();
    const t = this.interval(span, p);
    return this.ds.query<Record<(typeof COUNTS)[number] | 't', string>[]>(
      `SELECT ${t} AS t, ${COUNTS.map((c) => `sum(${c})::int AS ${c}`).join(', ')}
         FROM stats_tasks WHERE ${this.where(span, tenantId, p)} GROUP BY 1`,
      p.values,
    );
  }

  private latency(span: Span, tenantId: string | undefined) {
    const p = new Params();
    const t = this.interval(span, p);
    return this.ds.query<{ t: string; kind: string; slot: number; n: string }[]>(
      `SELECT ${t} AS t, kind, slot, sum(n)::int AS n
         FROM stats_latency WHERE ${this.where(span, tenantId, p)} GROUP BY 1, 2, 3`,
      p.values,
    );
  }

  private errors(span: Span, tenantId: string | undefined) {
    const p = new Params();
    const t = this.interval(span, p);
    return this.ds.query<{ t: string; binding: string; code: string; n: string }[]>(
      `SELECT ${t} AS t, binding, code, sum(n)::int AS n
         FROM stats_a2a_errors WHERE ${this.where(span, tenantId, p)} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      p.values,
    );
  }

  /** Tokens and cost by agent and by model over the window's whole hours (the usage rollups are hourly). */
  private async usageOf(span: Span, tenantId: string | undefined): Promise<StatsReport['usage']> {
    const from = new Date(Math.floor(span.from / HOUR) * HOUR);
    const to = new Date(Math.ceil(span.to / HOUR) * HOUR);
    const [agents, models] = await Promise.all([
      this.usage.report({ tenantId, from, to, groupBy: ['agent'] }),
      this.usage.report({ tenantId, from, to, groupBy: ['model'] }),
    ]);
    const slice = (key: 'agent' | 'model') => (r: UsageRow) => ({
      key: r[key] ?? '',
      calls: r.calls,
      input_tokens: r.input_tokens,
      output_tokens: r.output_tokens,
      cost: r.cost.amount,
    });
    return {
      from: from.toISOString(),
      to: to.toISOString(),
      currency: agents.totals.cost.currency,
      by_agent: agents.rows.map(slice('agent')),
      by_model: models.rows.map(slice('model')),
    };
  }
}
