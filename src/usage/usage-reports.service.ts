import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DomainError } from '../common/errors.js';
import { storableTime } from '../common/iso-time.js';
import { Params } from '../database/sql-params.js';
import { Prices } from './prices.service.js';

/** What a report may be grouped by (`tenant` on the operators' route only). */
export const GROUP_KEYS = ['agent', 'model', 'provider', 'tenant', 'day', 'hour'] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];

/** The longest period one report covers. */
export const MAX_REPORT_DAYS = 400;
/** The most rows one report answers (a finer grouping over a long period must be narrowed). */
export const MAX_REPORT_ROWS = 10_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface UsageQuery {
  /** One tenant's usage; undefined: every tenant's (operators). */
  tenantId?: string;
  from: Date;
  to: Date;
  groupBy: GroupKey[];
}

export interface UsageSums {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  unpriced_calls: number;
  cost: { amount: number; currency: string | null };
}

export type UsageRow = Partial<Record<GroupKey | 'tenant_name', string>> & UsageSums;

export interface UsageReport {
  from: string;
  to: string;
  group_by: GroupKey[];
  totals: UsageSums;
  rows: UsageRow[];
}

/** Each grouping's column, as the rollups hold it. */
const COLUMN: Record<GroupKey, string> = {
  agent: 'r.agent_id',
  model: 'r.model',
  provider: 'r.provider',
  tenant: 'r.tenant_id::text',
  day: `to_char(date_trunc('day', r.bucket, 'UTC') AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  hour: `to_char(r.bucket AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:00:00"Z"')`,
};

interface SumRow {
  calls: string;
  input_tokens: string;
  output_tokens: string;
  cached_tokens: string;
  cost: string;
  unpriced_calls: string;
}

/** Cost in 10⁻¹² units (the ledger's scale) as a bigint, so totals are summed exactly. */
const PICO = 12;
const pico = (decimal: string): bigint => {
  const [whole, frac = ''] = decimal.split('.');
  const neg = whole.startsWith('-');
  const v =
    BigInt(whole.replace('-', '') || '0') * 10n ** BigInt(PICO) + BigInt((frac + '0'.repeat(PICO)).slice(0, PICO));
  return neg ? -v : v;
};
const amountOf = (p: bigint): number => Number(p) / 10 ** PICO;

/**
 * Usage reports over the rollups: the daily table when the period is whole
 * UTC days and no grouping is by hour, else the hourly one — an indexed
 * range read of at most a few rows per agent, model and period, however many
 * calls the ledger holds.
 */
@Injectable()
export class UsageReports {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly prices: Prices,
  ) {}

  /** The period a query covers: whole hours (`from` rounded down, `to` up), checked against `MAX_REPORT_DAYS`. */
  static period(from: string | undefined, to: string | undefined, now = Date.now()): { from: Date; to: Date } {
    const parsed = (field: 'from' | 'to', value: string): number => {
      const ms = Date.parse(value);
      if (Number.isNaN(ms)) {
        // ISO 8601 forms a date reader does not take (weeks, ordinal days, the basic format).
        throw DomainError.validation([{ field, messages: [`${field} must be a date or time such as 2025-06-01`] }]);
      }
      return ms;
    };
    const end = to === undefined ? now : parsed('to', to);
    const start = from === undefined ? end - 30 * DAY : parsed('from', from);
    const f = Math.floor(start / HOUR) * HOUR;
    const t = Math.ceil(end / HOUR) * HOUR;
    // A default `from` out of range is the given `to`'s doing.
    for (const [field, at] of [
      [from === undefined ? 'to' : 'from', f],
      ['to', t],
    ] as const) {
      if (!storableTime(at)) {
        throw DomainError.validation([{ field, messages: [`${field} must be within the years 0001 to 9999 (UTC)`] }]);
      }
    }
    if (t <= f) throw DomainError.validation([{ field: 'to', messages: ['to must be after from'] }]);
    if (t - f > MAX_REPORT_DAYS * DAY) {
      throw DomainError.validation([
        { field: 'from', messages: [`the period from … to may be at most ${MAX_REPORT_DAYS} days`] },
      ]);
    }
    return { from: new Date(f), to: new Date(t) };
  }

  async report(q: UsageQuery): Promise<UsageReport> {
    const daily = !q.groupBy.includes('hour') && q.from.getTime() % DAY === 0 && q.to.getTime() % DAY === 0;
    const p = new Params();
    const where = [`r.bucket >= ${p.add(q.from)}`, `r.bucket < ${p.add(q.to)}`];
    if (q.tenantId) where.unshift(`r.tenant_id = ${p.add(q.tenantId)}`);
    const cols = q.groupBy.map((k) => `${COLUMN[k]} AS "${k}"`);
    const byTenant = q.groupBy.includes('tenant');
    if (byTenant) cols.push(`min(t.name) AS tenant_name`);
    const keys = q.groupBy.map((k) => COLUMN[k]);
    const sql = `SELECT ${[...cols, ...SUMS].join(', ')}
      FROM ${daily ? 'usage_daily' : 'usage_hourly'} r ${byTenant ? 'LEFT JOIN tenants t ON t.id = r.tenant_id' : ''}
      WHERE ${where.join(' AND ')}
      ${keys.length ? `GROUP BY ${keys.join(', ')} ORDER BY ${keys.join(', ')}` : 'HAVING count(*) > 0'}
      LIMIT ${MAX_REPORT_ROWS + 1}`;
    const rows = await this.ds.query<(SumRow & Record<string, string>)[]>(sql, p.values);
    if (rows.length > MAX_REPORT_ROWS) {
      throw DomainError.validation([
        { field: 'group_by', messages: [`more than ${MAX_REPORT_ROWS} rows: narrow the period or the grouping`] },
      ]);
    }
    const currency = this.prices.currency;
    const total = { calls: 0n, input: 0n, output: 0n, cached: 0n, unpriced: 0n, cost: 0n };
    const out = rows.map((r) => {
      total.calls += BigInt(r.calls);
      total.input += BigInt(r.input_tokens);
      total.output += BigInt(r.output_tokens);
      total.cached += BigInt(r.cached_tokens);
      total.unpriced += BigInt(r.unpriced_calls);
      total.cost += pico(r.cost);
      const row: UsageRow = {
        ...Object.fromEntries(q.groupBy.map((k) => [k, r[k]])),
        ...(byTenant ? { tenant_name: r.tenant_name ?? '' } : {}),
        ...sums(r, currency),
      };
      return row;
    });
    return {
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      group_by: q.groupBy,
      totals: {
        calls: Number(total.calls),
        input_tokens: Number(total.input),
        output_tokens: Number(total.output),
        cached_tokens: Number(total.cached),
        unpriced_calls: Number(total.unpriced),
        cost: { amount: amountOf(total.cost), currency },
      },
      rows: q.groupBy.length ? out : [],
    };
  }
}

const SUMS = [
  'sum(r.calls)::text AS calls',
  'sum(r.input_tokens)::text AS input_tokens',
  'sum(r.output_tokens)::text AS output_tokens',
  'sum(r.cached_tokens)::text AS cached_tokens',
  'sum(r.cost)::text AS cost',
  'sum(r.unpriced_calls)::text AS unpriced_calls',
];

function sums(r: SumRow, currency: string | null): UsageSums {
  return {
    calls: Number(r.calls),
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    cached_tokens: Number(r.cached_tokens),
    unpriced_calls: Number(r.unpriced_calls),
    cost: { amount: amountOf(pico(r.cost)), currency },
  };
}
