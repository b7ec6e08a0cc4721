/**
 * `npm run bench:usage`: the usage ledger at scale, on PostgreSQL
 * (`BENCH_DATABASE_URL`, default the local server), in a database of its own
 * that is dropped at the end.
 *
 * 1. Accounts `BENCH_USAGE_WRITES` calls (default 50 000) through the very
 *    CTEs the task log's statements carry (`usageCtes`), 64 calls per
 *    statement as group commit batches them: ledger row, hourly and daily
 *    rollups — the accounting's own cost per call.
 * 2. Bulk-inserts `BENCH_USAGE_CALLS` accounted calls (default 1 000 000) over
 *    the 60 days before now — 20 tenants × 10 agents × 4 models — and builds
 *    their rollups with one `INSERT … SELECT … GROUP BY` each.
 * 3. Times the reports a month asks for, through `UsageReports` itself
 *    (median of `BENCH_USAGE_REPS` runs, default 20), and, for comparison,
 *    the same month summed from the ledger directly.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { ENTITIES } from '../src/entities.js';
import { loadConfig } from '../src/config/app-config.js';
import { dataSourceOptions } from '../src/database/data-source-options.js';
import { runMigrations } from '../src/database/migrate.js';
import { usageCtes } from '../src/tasks/statements/usage.sql.js';
import type { Prices } from '../src/usage/prices.service.js';
import { UsageReports, type GroupKey } from '../src/usage/usage-reports.service.js';
import { cleanup, createDatabase, pgReachable } from './targets.js';
import { DataSource as TypeOrmDataSource } from 'typeorm';

const CALLS = Number(process.env.BENCH_USAGE_CALLS ?? 1_000_000);
const WRITES = Number(process.env.BENCH_USAGE_WRITES ?? 50_000);
const REPS = Number(process.env.BENCH_USAGE_REPS ?? 20);
const TENANTS = 20;
const DAY = 86_400_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number): string => `${x.toFixed(2)} ms`;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const out = await fn();
  return [performance.now() - t, out];
}

/** The accounting statement alone: `$1` holds (tenant_id, task_id, calls) rows, as APPEND's `t` would. */
const ACCOUNT = `WITH s AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id uuid, task_id varchar, calls jsonb)
  )${usageCtes('SELECT tenant_id, task_id, calls FROM s')}
  SELECT count(*) FROM s`;

async function main(): Promise<void> {
  if (!(await pgReachable())) throw new Error('bench:usage needs PostgreSQL (BENCH_DATABASE_URL)');
  Logger.overrideLogger(false); // TypeORM's migration lines
  const db = await createDatabase('usage');
  const ds = new TypeOrmDataSource(dataSourceOptions(loadConfig({ DATABASE_URL: db.url }), ENTITIES));
  await ds.initialize();
  await runMigrations(ds, false);
  await ds.destroy();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const tenants = Array.from({ length: TENANTS }, () => randomUUID());
    // 1. The accounting write, as the hot path does it.
    const batch = (k: number) =>
      Array.from({ length: 64 }, (_, i) => ({
        tenant_id: tenants[(k + i) % TENANTS],
        task_id: `task-${k}-${i}`,
        calls: [
          {
            agent: `agent-${i % 10}`,
            provider: 'openai',
            model: `model-${i % 4}`,
            input: 1000 + i,
            output: 200,
            cached: 100,
            price_in: 2.5,
            price_out: 10,
            price_cached: 1.25,
            currency: 'USD',
          },
        ],
      }));
    const statements = Math.ceil(WRITES / 64);
    // The same statements without the accounting CTEs: what reading the batch costs anyway.
    const [baseMs] = await timed(async () => {
      for (let k = 0; k < statements; k++) {
        await client.query(
          'SELECT count(*) FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id uuid, task_id varchar, calls jsonb)',
          [JSON.stringify(batch(k))],
        );
      }
    });
    const [writeMs] = await timed(async () => {
      for (let k = 0; k < statements; k++) await client.query(ACCOUNT, [JSON.stringify(batch(k))]);
    });
    const accounted = statements * 64;
    console.log(
      `accounting through usageCtes: ${accounted} calls in ${statements} statements of 64: ` +
        `${ms(writeMs)} (${((writeMs / statements) * 1000).toFixed(0)} µs per statement, ` +
        `${((writeMs / accounted) * 1000).toFixed(1)} µs per call, one connection; the same statements ` +
        `without the accounting: ${((baseMs / statements) * 1000).toFixed(0)} µs)`,
    );
    await client.query('TRUNCATE usage_ledger, usage_hourly, usage_daily');

    // 2. A million calls over 60 days, in bulk.
    const [bulkMs] = await timed(async () => {
      await client.query(
        `INSERT INTO usage_ledger (tenant_id, task_id, agent_id, provider, model, input_tokens, output_tokens,
                                   cached_tokens, cost, currency, created_at)
         SELECT ($1::uuid[])[1 + g % ${TENANTS}], 'task-' || (g / 3), 'agent-' || (g / ${TENANTS}) % 10,
                CASE WHEN (g / 7) % 4 = 3 THEN 'anthropic' ELSE 'openai' END, 'model-' || (g / 7) % 4,
                1000 + g % 500, 200 + g % 50, g % 300, (1000 + g % 500) * 0.0000025, 'USD',
                now() - (g::float8 / $2) * interval '60 days'
           FROM generate_series(1, $2) AS g`,
        [tenants, CALLS],
      );
      for (const [table, unit] of [
        ['usage_hourly', 'hour'],
        ['usage_daily', 'day'],
      ]) {
        await client.query(
          `INSERT INTO ${table} (tenant_id, bucket, agent_id, provider, model, calls, input_tokens, output_tokens,
                                 cached_tokens, cost, unpriced_calls)
           SELECT tenant_id, date_trunc('${unit}', created_at, 'UTC'), agent_id, provider, model, count(*),
                  sum(input_tokens), sum(output_tokens), sum(cached_tokens), COALESCE(sum(cost), 0),
                  count(*) FILTER (WHERE cost IS NULL)
             FROM usage_ledger GROUP BY 1, 2, 3, 4, 5`,
        );
      }
      await client.query('VACUUM ANALYZE usage_ledger, usage_hourly, usage_daily');
    });
    const sizes = await client.query<{ t: string; n: string }>(
      `SELECT 'usage_ledger' AS t, count(*)::text AS n FROM usage_ledger UNION ALL
       SELECT 'usage_hourly', count(*)::text FROM usage_hourly UNION ALL
       SELECT 'usage_daily', count(*)::text FROM usage_daily`,
    );
    console.log(
      `bulk: ${CALLS} calls and their rollups in ${(bulkMs / 1000).toFixed(1)} s; rows: ` +
        sizes.rows.map((r) => `${r.t} ${r.n}`).join(', '),
    );

    // 3. The month's reports.
    const queryable = { query: async (sql: string, params?: unknown[]) => (await client.query(sql, params)).rows };
    const reports = new UsageReports(queryable as unknown as DataSource, { currency: 'USD' } as Prices);
    const now = Date.now();
    const to = new Date(Math.floor(now / DAY) * DAY);
    const from = new Date(to.getTime() - 30 * DAY);
    const hourly = UsageReports.period(new Date(now - 30 * DAY).toISOString(), new Date(now).toISOString());
    const cases: [string, string | undefined, { from: Date; to: Date }, GroupKey[]][] = [
      ['one tenant, 30 whole days, by agent (daily rollup)', tenants[0], { from, to }, ['agent']],
      ['one tenant, 30 days, by agent and model (hourly rollup)', tenants[0], hourly, ['agent', 'model']],
      ['one tenant, 30 days, by day and model', tenants[0], { from, to }, ['day', 'model']],
      ['one tenant, 30 days, by hour', tenants[0], hourly, ['hour']],
      ['every tenant, 30 whole days, by tenant (operators)', undefined, { from, to }, ['tenant']],
    ];
    for (const [name, tenantId, period, groupBy] of cases) {
      const times: number[] = [];
      let rows = 0;
      let calls = 0;
      for (let i = 0; i < REPS; i++) {
        const [t, r] = await timed(() => reports.report({ tenantId, ...period, groupBy }));
        times.push(t);
        rows = r.rows.length;
        calls = r.totals.calls;
      }
      console.log(
        `report ${name}: median ${ms(median(times))} (min ${ms(Math.min(...times))}), ${rows} rows, ${calls} calls`,
      );
    }
    const direct: number[] = [];
    for (let i = 0; i < Math.min(REPS, 5); i++) {
      const [t] = await timed(() =>
        client.query(
          `SELECT agent_id, sum(input_tokens), sum(output_tokens), sum(cost) FROM usage_ledger
            WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY agent_id`,
          [tenants[0], from, to],
        ),
      );
      direct.push(t);
    }
    console.log(`for comparison, the same month by agent summed from the ledger: median ${ms(median(direct))}`);
  } finally {
    await client.end();
    await cleanup();
  }
}

main().catch(async (err: unknown) => {
  console.error(err);
  await cleanup();
  process.exit(1);
});
