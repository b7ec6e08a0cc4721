import { useEffect, useMemo, useState } from 'preact/hooks';
import {
  BUDGET_KEYS,
  q,
  type AllBudgets,
  type Api,
  type Budget,
  type BudgetKey,
  type Budgets,
  type Stats,
  type Tenant,
} from './api';
import { Bars, ChartCard, round, TimeChart, type Series } from './charts';
import { hasLimits, usedOf, USE_LABELS, UseBars } from './budgets';
import { ErrorBox, PageTitle } from './ui';

export const WINDOWS = [
  ['15m', '15 minutes'],
  ['1h', '1 hour'],
  ['6h', '6 hours'],
  ['24h', '24 hours'],
  ['7d', '7 days'],
  ['30d', '30 days'],
] as const;

/** How often the page asks again (the server keeps each answer 5 s). */
export const REFRESH_MS = 10_000;

const OUTCOMES = [
  ['started', 'started'],
  ['completed', 'completed'],
  ['failed', 'failed'],
  ['canceled', 'canceled'],
  ['input_required', 'waiting for input'],
] as const;

const secs = (v: number | null): string =>
  v === null ? '—' : v === 0 ? '0' : v < 1 ? `${Math.round(v * 1000)} ms` : `${round(v)} s`;
const money = (v: number, currency: string | null): string => (currency ? `${round(v)} ${currency}` : round(v));

/** Loads the stats for `window` (and `tenant`, operators) now and every `REFRESH_MS`, keeping the last answer. */
function useStats(api: Api, admin: boolean, window: string, tenant: string) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [at, setAt] = useState<Date | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    const path = admin ? `/v1/admin/stats${q({ window, tenant })}` : `/v1/stats${q({ window })}`;
    const load = (): void => {
      api.get<Stats>(path, ctl.signal).then(
        (s) => {
          setStats(s);
          setError(null);
          setAt(new Date());
        },
        (e: unknown) => !ctl.signal.aborted && setError(e),
      );
    };
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => {
      ctl.abort();
      clearInterval(timer);
    };
  }, [window, tenant]);
  return { stats, error, at };
}

/** The first page after sign-in: what runs, how fast, what fails and who spends what, over a window. */
export function Overview(props: { api: Api; admin: boolean }) {
  const { api, admin } = props;
  const [window, setWindow] = useState('1h');
  const [tenant, setTenant] = useState('');
  const [tenants, setTenants] = useState<Tenant[]>([]);
  useEffect(() => {
    if (admin)
      void api.get<{ items: Tenant[] }>('/v1/admin/tenants?limit=200').then(
        (p) => setTenants(p.items),
        () => undefined,
      );
  }, []);
  const { stats, error, at } = useStats(api, admin, window, tenant);
  return (
    <section class="overview">
      <div class="page-head">
        <PageTitle>Overview</PageTitle>
        <form class="filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            Window{' '}
            <select value={window} onChange={(e) => setWindow(e.currentTarget.value)}>
              {WINDOWS.map(([v, label]) => (
                <option value={v} key={v}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          {admin && (
            <label>
              Tenant{' '}
              <select value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
                <option value="">All tenants</option>
                {tenants.map((t) => (
                  <option value={t.id} key={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            </label>
          )}
        </form>
        <p class="muted updated" aria-live="polite">
          {at ? `Updated ${at.toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s` : 'Loading…'}
        </p>
      </div>
      <ErrorBox error={error} />
      {stats && <Charts stats={stats} />}
    </section>
  );
}

function Charts(props: { stats: Stats }) {
  const s = props.stats;
  const x = useMemo(() => s.intervals.map((i) => Date.parse(i.start) / 1000), [s]);
  const label = (iso: string): string => new Date(iso).toLocaleString([], { dateStyle: 'short', timeStyle: 'short' });
  const span = WINDOWS.find(([w]) => w === s.window)?.[1] ?? s.window;
  const outcomes: Series[] = OUTCOMES.map(([k, name]) => ({ label: name, values: s.intervals.map((i) => i[k]) }));
  const t = s.totals;
  const latency: Series[] = [
    { label: 'first event p50', values: s.intervals.map((i) => i.first_event.p50) },
    { label: 'first event p95', values: s.intervals.map((i) => i.first_event.p95) },
    { label: 'duration p50', values: s.intervals.map((i) => i.duration.p50) },
    { label: 'duration p95', values: s.intervals.map((i) => i.duration.p95) },
  ];
  const errorKeys = s.a2a_errors.map((e) => `${e.binding} ${e.code}`);
  const errors: Series[] = s.a2a_errors.map((e) => ({
    label: `${e.binding} ${e.code}`,
    values: s.intervals.map((i) => i.a2a_errors.find((x) => x.binding === e.binding && x.code === e.code)?.count ?? 0),
  }));
  const cur = s.usage.currency;
  const tokens = (r: { input_tokens: number; output_tokens: number }): number => r.input_tokens + r.output_tokens;
  const usageRows = (rows: Stats['usage']['by_agent']) =>
    rows.map((r) => [r.key, r.calls, r.input_tokens, r.output_tokens, money(r.cost, cur)]);
  const usageSummary = (rows: Stats['usage']['by_agent'], what: string): string => {
    if (rows.length === 0) return `No model calls in the hours of this window.`;
    const top = [...rows].sort((a, b) => tokens(b) - tokens(a))[0]!;
    const all = rows.reduce((n, r) => n + tokens(r), 0);
    const cost = rows.reduce((n, r) => n + r.cost, 0);
    return `${round(all)} tokens${cur ? `, ${money(cost, cur)}` : ''} across ${rows.length} ${what}; most: ${top.key} (${round(tokens(top))} tokens).`;
  };
  const bars = (rows: Stats['usage']['by_agent']) =>
    rows.map((r) => ({
      label: r.key,
      value: tokens(r),
      text: `${round(tokens(r))} tokens${cur ? `, ${money(r.cost, cur)}` : ''}`,
    }));
  return (
    <div class="charts">
      <ChartCard
        testid="chart-tasks"
        title="Tasks"
        summary={`Over the last ${span}: ${t.started} started, ${t.completed} completed, ${t.failed} failed, ${t.canceled} canceled, ${t.input_required} waiting for input.`}
        columns={['interval', ...OUTCOMES.map(([, n]) => n)]}
        rows={s.intervals
          .filter((i) => OUTCOMES.some(([k]) => i[k] > 0))
          .map((i) => [label(i.start), ...OUTCOMES.map(([k]) => i[k])])}
      >
        <TimeChart x={x} series={outcomes} integer />
      </ChartCard>
      <ChartCard
        testid="chart-latency"
        title="Time to first event and run duration"
        summary={`Over the last ${span}: time to first event p50 ${secs(t.first_event.p50)}, p95 ${secs(t.first_event.p95)}; run duration p50 ${secs(t.duration.p50)}, p95 ${secs(t.duration.p95)}.`}
        columns={['interval', ...latency.map((l) => `${l.label} (s)`)]}
        rows={s.intervals
          .filter((i) => i.duration.p50 !== null || i.first_event.p50 !== null)
          .map((i) => [
            label(i.start),
            ...[i.first_event.p50, i.first_event.p95, i.duration.p50, i.duration.p95].map((v) =>
              v === null ? '—' : v,
            ),
          ])}
      >
        <TimeChart x={x} series={latency} format={secs} />
      </ChartCard>
      <ChartCard
        testid="chart-errors"
        title="A2A errors"
        summary={
          t.a2a_errors === 0
            ? `No A2A errors over the last ${span}.`
            : `${t.a2a_errors} A2A error${t.a2a_errors === 1 ? '' : 's'} over the last ${span}: ${s.a2a_errors.map((e) => `${e.count} × ${e.code} (${e.binding})`).join(', ')}.`
        }
        columns={['binding', 'code', 'errors']}
        rows={s.a2a_errors.map((e) => [e.binding, e.code, e.count])}
      >
        {errorKeys.length ? <TimeChart x={x} series={errors} integer /> : <p class="muted">No A2A errors.</p>}
      </ChartCard>
      <ChartCard
        testid="chart-agents"
        title="Tokens and cost by agent"
        summary={usageSummary(s.usage.by_agent, 'agents')}
        columns={['agent', 'calls', 'input tokens', 'output tokens', 'cost']}
        rows={usageRows(s.usage.by_agent)}
      >
        <Bars rows={bars(s.usage.by_agent)} />
      </ChartCard>
      <ChartCard
        testid="chart-models"
        title="Tokens and cost by model"
        summary={usageSummary(s.usage.by_model, 'models')}
        columns={['model', 'calls', 'input tokens', 'output tokens', 'cost']}
        rows={usageRows(s.usage.by_model)}
      >
        <Bars rows={bars(s.usage.by_model)} />
      </ChartCard>
      {s.budgets && <BudgetChart budgets={s.budgets} />}
    </div>
  );
}

/** Who a budget belongs to, and its use: the overview's budget chart shows one group per tenant or agent. */
interface BudgetRow {
  who: string;
  budget: Budget;
}

/** Every budget set, tenants' and agents', from the stats answer (one tenant's, or every tenant's). */
export function budgetRows(b: Budgets | AllBudgets): BudgetRow[] {
  const of = (prefix: string, tenant: Budget, agents: Budgets['agents'], tenantLabel: string): BudgetRow[] => [
    ...(hasLimits(tenant) ? [{ who: tenantLabel, budget: tenant }] : []),
    ...agents.filter(hasLimits).map((a) => ({ who: `${prefix}${a.agent}`, budget: a })),
  ];
  return 'tenants' in b
    ? b.tenants.flatMap((t) => of(`${t.tenant_name} / `, t.tenant, t.agents, `tenant ${t.tenant_name}`))
    : of('', b.tenant, b.agents, 'the tenant');
}

/** Budget use per agent (and the tenant's) against each limit, today and this month. */
function BudgetChart(props: { budgets: Budgets | AllBudgets }) {
  const b = props.budgets;
  const rows = budgetRows(b);
  const cur = b.currency;
  const limited = rows.flatMap((r) =>
    BUDGET_KEYS.filter((k) => r.budget.limits[k] !== null).map((k) => ({
      who: r.who,
      key: k,
      used: usedOf(r.budget, k),
      limit: r.budget.limits[k]!,
      resets: r.budget.used[k.endsWith('_day') ? 'day' : 'month'].resets_at,
    })),
  );
  const pct = (u: { used: number; limit: number }): number => Math.round((u.used / u.limit) * 100);
  const amount = (k: BudgetKey, v: number): string => (k.startsWith('cost_') ? money(v, cur) : round(v));
  const top = [...limited].sort((x, y) => y.used / y.limit - x.used / x.limit)[0];
  const over = limited.filter((u) => pct(u) >= b.warn_at_percent).length;
  const summary = top
    ? `${limited.length} budget${limited.length === 1 ? '' : 's'} set; ` +
      `most used: ${top.who}, ${USE_LABELS[top.key].toLowerCase()} ${amount(top.key, top.used)} of ${amount(top.key, top.limit)} (${pct(top)}%)` +
      `${over ? `; ${over} at or past the ${b.warn_at_percent}% warning` : ''}.`
    : 'No budgets are set: nothing limits what agents spend.';
  return (
    <ChartCard
      testid="chart-budgets"
      title={'tenants' in b ? 'Budget use by tenant and agent' : 'Budget use by agent'}
      summary={summary}
      columns={['whose', 'budget', 'used', 'limit', 'used %', 'resets (UTC)']}
      rows={limited.map((u) => [
        u.who,
        USE_LABELS[u.key].toLowerCase(),
        amount(u.key, u.used),
        amount(u.key, u.limit),
        pct(u),
        u.resets.slice(0, 16).replace('T', ' '),
      ])}
    >
      {rows.length ? (
        <ul class="bars budgets">
          {rows.map((r) => (
            <li key={r.who}>
              <strong>{r.who}</strong>
              <UseBars budget={r.budget} currency={cur} warnAt={b.warn_at_percent} resets={false} />
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">No budgets.</p>
      )}
    </ChartCard>
  );
}
