import type { TaskEventBody } from '../task-events.js';
import type { AccountedCall } from '../../usage/usage-call.js';

/** The rollup columns a call adds to, and how a conflicting row takes the increment. */
const SUMS = ['calls', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost', 'unpriced_calls'];
const ADD = SUMS.map((c) => `${c} = r.${c} + excluded.${c}`).join(', ');

/** One rollup's upsert: the calls of the statement summed per key, in key order (so concurrent writers lock alike). */
const rollup = (table: string, unit: 'hour' | 'day'): string => `
    INSERT INTO ${table} AS r (tenant_id, bucket, agent_id, provider, model, ${SUMS.join(', ')})
    SELECT tenant_id, date_trunc('${unit}', now(), 'UTC'), agent, provider, model, count(*), sum(input), sum(output),
           sum(cached), COALESCE(sum(cost), 0), count(*) FILTER (WHERE cost IS NULL)
      FROM uc GROUP BY tenant_id, agent, provider, model ORDER BY tenant_id, agent, provider, model
    ON CONFLICT (tenant_id, bucket, agent_id, provider, model) DO UPDATE SET ${ADD}`;

/**
 * The CTEs that account the model calls a statement's usage events report:
 * a ledger row per call, costed from the prices it carries in exact decimal
 * arithmetic, and the hourly and daily rollups, in the transaction that
 * writes the events (nothing is accounted for a write that is refused).
 * `source` yields `(tenant_id, task_id, calls jsonb)` for the rows written.
 * Appended to a statement's `WITH` list after its writes (it begins with a comma).
 */
export function usageCtes(source: string): string {
  return `, u AS (
    SELECT s.tenant_id, s.task_id, c.* FROM (${source}) s,
      jsonb_to_recordset(s.calls) AS c(agent varchar, provider varchar, model varchar, input bigint, output bigint,
        cached bigint, price_in numeric, price_out numeric, price_cached numeric, currency varchar)
  ), uc AS (
    SELECT u.*, CASE WHEN price_in IS NULL OR price_out IS NULL OR price_cached IS NULL THEN NULL
      ELSE round(((input - cached) * price_in + cached * price_cached + output * price_out) / 1000000, 12) END AS cost
      FROM u
  ), ul AS (
    INSERT INTO usage_ledger (tenant_id, task_id, agent_id, provider, model, input_tokens, output_tokens,
                              cached_tokens, cost, currency, created_at)
    SELECT tenant_id, task_id, agent, provider, model, input, output, cached, cost, currency, now() FROM uc
  ), uh AS (${rollup('usage_hourly', 'hour')}
  ), ud AS (${rollup('usage_daily', 'day')}
  )`;
}

/**
 * The CTE that counts the messages a statement stored (a new task, or a message that continues one) per tenant,
 * agent and UTC day in `usage_requests` — what request budgets are checked against — in key order (so concurrent
 * writers lock alike). `source` yields `(tenant_id, agent_id)` per message written. Begins with a comma.
 */
export function requestsCte(source: string): string {
  return `, rq AS (
    INSERT INTO usage_requests AS r (tenant_id, bucket, agent_id, requests)
    SELECT tenant_id, date_trunc('day', now(), 'UTC'), agent_id, count(*) FROM (${source}) s
     GROUP BY tenant_id, agent_id ORDER BY tenant_id, agent_id
    ON CONFLICT (tenant_id, bucket, agent_id) DO UPDATE SET requests = r.requests + excluded.requests
  )`;
}

/** The model calls `events` report (on their usage events), or null when there are none. */
export function callsOf(events: readonly TaskEventBody[]): AccountedCall[] | null {
  let out: AccountedCall[] | null = null;
  for (const e of events) {
    if (e.kind === 'usage' && e.calls?.length) (out ??= []).push(...e.calls);
  }
  return out;
}
