import { useState } from 'preact/hooks';
import { ApiError, q, type Api, type Tenant, type UsageReport } from './api';
import { round } from './charts';
import { ErrorBox, PageTitle, useLoad } from './ui';

const GROUPS = ['agent', 'model', 'day'] as const;
const PERIODS = [
  ['7', 'Last 7 days'],
  ['30', 'Last 30 days'],
  ['90', 'Last 90 days'],
  ['month', 'This month'],
] as const;

/** The period's `from` (a UTC date): days back from today, or the first of this month. */
const fromOf = (period: string, now = new Date()): string => {
  if (period === 'month') return `${now.toISOString().slice(0, 7)}-01`;
  return new Date(now.getTime() - Number(period) * 86_400_000).toISOString().slice(0, 10);
};

/**
 * Downloads `path` (with the bearer, which only this page holds) and saves it as `name` through a blob link: the
 * browser cannot fetch it by itself, since the console keeps the token in memory.
 */
async function download(api: Api, path: string, name: string): Promise<void> {
  const res = await fetch(path, { headers: api.headers(), credentials: 'omit', cache: 'no-store' });
  if (!res.ok) throw new ApiError(res.status, `The download failed: HTTP ${res.status}`, 'error');
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The usage page: the table behind the usage charts, by agent, model and day, over a period; CSV download. */
export function UsagePage(props: { api: Api; admin: boolean }) {
  const { api, admin } = props;
  const [period, setPeriod] = useState('30');
  const [groups, setGroups] = useState<string[]>(['agent', 'model']);
  const [tenant, setTenant] = useState('');
  const [downloadError, setDownloadError] = useState<unknown>(null);
  const keys = admin ? (tenant ? groups : ['tenant', ...groups]) : groups;
  const query = { from: fromOf(period), group_by: keys.join(','), tenant: admin ? tenant : undefined };
  const base = admin ? '/v1/admin/usage' : '/v1/usage';
  const tenants = useLoad<Tenant[]>(
    async (signal) => (admin ? (await api.get<{ items: Tenant[] }>('/v1/admin/tenants?limit=200', signal)).items : []),
    [],
  );
  const report = useLoad(
    (signal) => api.get<UsageReport>(`${base}${q(query)}`, signal),
    [period, groups.join(), tenant],
  );
  const r = report.data;
  const currency = r?.totals.cost.currency ?? null;
  const toggle = (g: string): void =>
    setGroups((gs) => (gs.includes(g) ? gs.filter((x) => x !== g) : GROUPS.filter((x) => x === g || gs.includes(x))));
  return (
    <section>
      <PageTitle>Usage</PageTitle>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Period{' '}
          <select value={period} onChange={(e) => setPeriod(e.currentTarget.value)}>
            {PERIODS.map(([v, l]) => (
              <option value={v} key={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        {admin && (
          <label>
            Tenant{' '}
            <select value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
              <option value="">All tenants</option>
              {(tenants.data ?? []).map((t) => (
                <option value={t.id} key={t.id}>
                  {t.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <fieldset>
          <legend>Group by</legend>
          {GROUPS.map((g) => (
            <label key={g}>
              <input type="checkbox" checked={groups.includes(g)} onChange={() => toggle(g)} /> {g}
            </label>
          ))}
        </fieldset>
        <button
          type="button"
          onClick={() => {
            setDownloadError(null);
            download(api, `${base}${q({ ...query, format: 'csv' })}`, `usage-${query.from}.csv`).catch(
              setDownloadError,
            );
          }}
        >
          Download CSV
        </button>
      </form>
      <ErrorBox error={report.error ?? downloadError} />
      {r && (
        <>
          <p data-testid="usage-totals">
            From {r.from.slice(0, 10)} to {r.to.slice(0, 16).replace('T', ' ')} UTC: {r.totals.calls} calls,{' '}
            {round(r.totals.input_tokens)} input tokens ({round(r.totals.cached_tokens)} cached),{' '}
            {round(r.totals.output_tokens)} output tokens
            {currency ? `, ${round(r.totals.cost.amount)} ${currency}` : ''}
            {r.totals.unpriced_calls ? `; ${r.totals.unpriced_calls} calls had no price` : ''}.
          </p>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  {keys.map((k) => (
                    <th scope="col" key={k}>
                      {k}
                    </th>
                  ))}
                  <th scope="col">calls</th>
                  <th scope="col">input tokens</th>
                  <th scope="col">cached tokens</th>
                  <th scope="col">output tokens</th>
                  <th scope="col">cost{currency ? ` (${currency})` : ''}</th>
                </tr>
              </thead>
              <tbody>
                {r.rows.map((row, i) => (
                  <tr key={i}>
                    {keys.map((k) => (
                      <td key={k}>{String(k === 'tenant' ? (row.tenant_name ?? row.tenant) : (row[k] ?? ''))}</td>
                    ))}
                    <td class="num">{row.calls}</td>
                    <td class="num">{row.input_tokens}</td>
                    <td class="num">{row.cached_tokens}</td>
                    <td class="num">{row.output_tokens}</td>
                    <td class="num">{round(row.cost.amount)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {r.rows.length === 0 && <p class="muted">No model calls in this period.</p>}
          </div>
        </>
      )}
    </section>
  );
}
