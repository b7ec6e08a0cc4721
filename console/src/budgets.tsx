import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  BUDGET_KEYS,
  q,
  type AllBudgets,
  type Agent,
  type Api,
  type Budget,
  type BudgetKey,
  type Budgets,
  type Page,
  type Tenant,
} from './api';
import { round } from './charts';
import { ErrorBox, PageTitle, useLoad } from './ui';

export const budgetsPath = (admin: boolean, tenant: string): string =>
  admin ? `/v1/admin/budgets${q({ tenant })}` : '/v1/budgets';

export const LABELS: Record<BudgetKey, string> = {
  tokens_per_day: 'Tokens per day',
  tokens_per_month: 'Tokens per month',
  cost_per_day: 'Cost per day',
  cost_per_month: 'Cost per month',
  requests_per_day: 'Requests per day',
  requests_per_month: 'Requests per month',
};

/** How a budget's use is named beside its meter. */
export const USE_LABELS: Record<BudgetKey, string> = {
  tokens_per_day: 'Tokens today',
  tokens_per_month: 'Tokens this month',
  cost_per_day: 'Cost today',
  cost_per_month: 'Cost this month',
  requests_per_day: 'Requests today',
  requests_per_month: 'Requests this month',
};

const periodOf = (k: BudgetKey): 'day' | 'month' => (k.endsWith('_day') ? 'day' : 'month');
/** What `budget` used against key `k`: tokens, cost or requests in the key's period. */
export const usedOf = (budget: Budget, k: BudgetKey): number =>
  budget.used[periodOf(k)][k.startsWith('tokens_') ? 'tokens' : k.startsWith('cost_') ? 'cost' : 'requests'];
export const hasLimits = (b: Budget): boolean => BUDGET_KEYS.some((k) => b.limits[k] !== null);

/** When a period resets, as a reader takes it in: "00:00 UTC on 27 Nov" (UTC, as budgets are). */
export const resetText = (iso: string): string => {
  const d = new Date(iso);
  return `${d.toISOString().slice(11, 16)} UTC on ${d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' })}`;
};

/**
 * Whether this server has budgets: its budgets route answers anything but 404 (a server without them has no such
 * route, and the console then hides the page). Undefined while it is being asked.
 */
export function useBudgetsAvailable(api: Api | null, admin: boolean): boolean | undefined {
  const [has, setHas] = useState<boolean | undefined>(undefined);
  useEffect(() => {
    setHas(undefined);
    if (!api) return;
    const probe = admin ? '/v1/admin/budgets' : '/v1/budgets';
    api.get(probe).then(
      () => setHas(true),
      (e: unknown) => setHas(!(e instanceof ApiError && e.status === 404)),
    );
  }, [api]);
  return has;
}

/** Used against limit: a `<meter>` (amber at the warning threshold, red at the limit); without a limit, the use. */
function Use(props: { label: string; used: number; limit: number | null; warnAt: number; unit: string }) {
  const { used, limit } = props;
  if (limit === null) {
    return (
      <div class="use">
        <span class="bar-label">{props.label}</span>
        <span class="muted">no limit</span>
        <span class="bar-value">
          {round(used)}
          {props.unit} used
        </span>
      </div>
    );
  }
  const pct = Math.round((used / limit) * 100);
  const text = `${round(used)} of ${round(limit)}${props.unit} (${pct}%)`;
  return (
    <div class="use">
      <span class="bar-label">{props.label}</span>
      <meter
        min={0}
        max={limit}
        value={Math.min(used, limit)}
        low={(limit * props.warnAt) / 100}
        high={limit * 0.999}
        optimum={0}
        aria-label={`${props.label}: ${text}`}
      />
      <span class="bar-value">{text}</span>
    </div>
  );
}

/**
 * A budget's use against its limits: each limit set (all four with `all`: tokens always, costs when the server has
 * prices or a cost limit is set) and when its periods reset.
 */
export function UseBars(props: {
  budget: Budget;
  currency: string | null;
  warnAt: number;
  all?: boolean;
  resets?: boolean;
}) {
  const { budget } = props;
  const cur = props.currency ? ` ${props.currency}` : '';
  const keys = BUDGET_KEYS.filter(
    (k) => budget.limits[k] !== null || (props.all && (!k.startsWith('cost_') || props.currency !== null)),
  );
  return (
    <>
      {keys.map((k) => (
        <Use
          key={k}
          label={USE_LABELS[k]}
          used={usedOf(budget, k)}
          limit={budget.limits[k]}
          warnAt={props.warnAt}
          unit={k.startsWith('cost_') ? cur : ''}
        />
      ))}
      {props.resets !== false && keys.length > 0 && (
        <p class="muted resets">
          The day resets at {resetText(budget.used.day.resets_at)}, the month at{' '}
          {resetText(budget.used.month.resets_at)}.
        </p>
      )}
    </>
  );
}

/** A 400's `details`, by field: Arbiter's `[{field, messages}]` (or `[{field, message}]`). */
const fieldErrors = (err: unknown): Partial<Record<string, string>> => {
  if (!(err instanceof ApiError) || err.status !== 400) return {};
  const out: Record<string, string> = {};
  for (const d of err.details as { field: string; messages?: string[]; message?: string }[]) {
    const key = d.field.split('.').pop() ?? d.field;
    out[key] = d.message ?? d.messages?.join('; ') ?? 'invalid';
  }
  return out;
};

/** A field's text as the body carries it: empty → null (no limit), a number, else the text (the server names it). */
const valueOf = (text: string): number | string | null => {
  const t = text.trim();
  if (t === '') return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
};

/** The four limits as a form: empty clears one; a 400's details are shown on their fields. */
function LimitsForm(props: {
  id: string;
  name: string;
  budget: Budget;
  currency: string | null;
  save: (body: Record<BudgetKey, number | string | null>) => Promise<unknown>;
  clear?: () => Promise<unknown>;
  onSaved: (what: string) => void;
  onCancel?: () => void;
}) {
  const [values, setValues] = useState<Record<BudgetKey, string>>(
    () =>
      Object.fromEntries(
        BUDGET_KEYS.map((k) => [k, props.budget.limits[k] === null ? '' : String(props.budget.limits[k])]),
      ) as Record<BudgetKey, string>,
  );
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const errors = fieldErrors(error);
  const elsewhere = Object.keys(errors).some((k) => !(BUDGET_KEYS as readonly string[]).includes(k));
  const run = async (op: () => Promise<unknown>, what: string): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await op();
      props.onSaved(what);
    } catch (e) {
      setError(e);
      // The first bad field takes the focus.
      const bad = fieldErrors(e);
      const first = BUDGET_KEYS.find((k) => bad[k]);
      if (first) setTimeout(() => document.getElementById(`${props.id}-${first}`)?.focus(), 0);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: Event): void => {
    e.preventDefault();
    const body = Object.fromEntries(BUDGET_KEYS.map((k) => [k, valueOf(values[k])])) as Record<
      BudgetKey,
      number | string | null
    >;
    void run(() => props.save(body), `Saved the budget of ${props.name}.`);
  };
  const unit = (k: BudgetKey): string =>
    k.startsWith('tokens_')
      ? 'tokens'
      : k.startsWith('requests_')
        ? 'messages'
        : props.currency
          ? props.currency
          : 'needs prices';
  return (
    <form class="limits" onSubmit={submit} aria-label={`Budget of ${props.name}`}>
      <div class="field-row">
        {BUDGET_KEYS.map((k) => (
          <div class="field" key={k}>
            <label for={`${props.id}-${k}`}>
              {LABELS[k]} <span class="muted">({unit(k)})</span>
            </label>
            <input
              id={`${props.id}-${k}`}
              inputMode="decimal"
              value={values[k]}
              placeholder="no limit"
              aria-invalid={errors[k] ? true : undefined}
              aria-describedby={errors[k] ? `${props.id}-${k}-err` : undefined}
              onInput={(e) => setValues({ ...values, [k]: e.currentTarget.value })}
            />
            {errors[k] && (
              <p id={`${props.id}-${k}-err`} class="field-error" data-field={k}>
                {errors[k]}
              </p>
            )}
          </div>
        ))}
      </div>
      {(Object.keys(errors).length === 0 || elsewhere) && <ErrorBox error={error} />}
      <button type="submit" disabled={busy}>
        Save
      </button>{' '}
      {props.clear && hasLimits(props.budget) && (
        <button
          type="button"
          disabled={busy}
          onClick={() => void run(props.clear!, `Removed the budget of ${props.name}.`)}
        >
          Remove budget
        </button>
      )}{' '}
      {props.onCancel && (
        <button type="button" class="link" disabled={busy} onClick={props.onCancel}>
          Cancel
        </button>
      )}
    </form>
  );
}

/** Every tenant with a budget (operators, no tenant chosen): each tenant's use and its agents'. */
function AllTenants(props: { all: AllBudgets; choose: (id: string) => void; mayEdit: boolean }) {
  const { all } = props;
  if (all.tenants.length === 0) {
    return <p class="muted">No tenant has a budget yet. Choose a tenant above to set its limits.</p>;
  }
  return (
    <ul class="budget-list">
      {all.tenants.map((t) => (
        <li key={t.tenant_id} class="budget" data-testid={`budget-tenant-${t.tenant_name}`}>
          <div class="chart-head">
            <h2>{t.tenant_name}</h2>
            <button type="button" class="small" onClick={() => props.choose(t.tenant_id)}>
              {props.mayEdit ? `Edit budget of ${t.tenant_name}` : `Show ${t.tenant_name}`}
            </button>
          </div>
          <p class="muted">
            <code>{t.tenant_id}</code>
          </p>
          {hasLimits(t.tenant) ? (
            <UseBars budget={t.tenant} currency={all.currency} warnAt={all.warn_at_percent} />
          ) : (
            <p class="muted">No tenant budget.</p>
          )}
          {t.agents
            .filter((a) => hasLimits(a))
            .map((a) => (
              <div key={a.agent} class="agent-use">
                <h3>{a.agent}</h3>
                <UseBars budget={a} currency={all.currency} warnAt={all.warn_at_percent} resets={false} />
              </div>
            ))}
        </li>
      ))}
    </ul>
  );
}

/** The budgets page: the tenant's budget and each agent's, used against limit; editable where the credential may. */
export function BudgetsPage(props: { api: Api; admin: boolean; mayEdit: boolean }) {
  const { api, admin, mayEdit } = props;
  const [tenant, setTenant] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const tenants = useLoad<Tenant[]>(
    async (signal) => (admin ? (await api.get<{ items: Tenant[] }>('/v1/admin/tenants?limit=200', signal)).items : []),
    [],
  );
  const budgets = useLoad<Budgets | AllBudgets>(
    (signal) => api.get<Budgets | AllBudgets>(budgetsPath(admin, tenant), signal),
    [tenant],
  );
  // A tenant that may edit its agents' budgets may give one to an agent that has none yet.
  const agents = useLoad<string[]>(
    async (signal) =>
      !admin && mayEdit ? (await api.get<Page<Agent>>('/v1/agents?limit=200', signal)).items.map((a) => a.id) : [],
    [],
  );
  const [editing, setEditing] = useState<string | null>(null);
  const [adding, setAdding] = useState('');
  const data = budgets.data;
  const one = data && 'tenant' in data ? data : null;
  const saved = (what: string): void => {
    setEditing(null);
    setAdding('');
    setNotice(what);
    budgets.reload();
  };
  const choose = (id: string): void => {
    setNotice(null);
    setEditing(null);
    setTenant(id);
  };
  const tenantName = (tenants.data ?? []).find((t) => t.id === tenant)?.name ?? tenant;
  const listed = new Set(one?.agents.map((a) => a.agent));
  const unbudgeted = (agents.data ?? []).filter((a) => !listed.has(a));
  return (
    <section class="budgets-page">
      <PageTitle>Budgets</PageTitle>
      <p class="muted">
        Limits per UTC day and month, in tokens, in requests or in cost{data?.currency ? ` (${data.currency})` : ''}. A
        run that has reached one is refused, or stopped between model calls. Bars turn amber at{' '}
        {data?.warn_at_percent ?? 80}% and red at the limit.
      </p>
      {admin && (
        <label>
          Tenant{' '}
          <select value={tenant} onChange={(e) => choose(e.currentTarget.value)}>
            <option value="">All tenants with a budget</option>
            {(tenants.data ?? []).map((t) => (
              <option value={t.id} key={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <p class="ok" role="status" aria-live="polite" data-testid="budgets-notice">
        {notice}
      </p>
      <ErrorBox error={budgets.error} />
      {data && !one && <AllTenants all={data as AllBudgets} choose={choose} mayEdit={mayEdit} />}
      {one && (
        <>
          <h2>{admin ? `Tenant ${tenantName}` : 'Tenant'}</h2>
          <div class="budget" data-testid="budget-tenant">
            <UseBars budget={one.tenant} currency={one.currency} warnAt={one.warn_at_percent} all />
            {!hasLimits(one.tenant) && <p class="muted">No tenant budget.</p>}
            {admin && mayEdit && (
              // Keyed on the tenant only: after a save the form holds what was saved, and the read of the budgets
              // that follows (for the bars) must not rebuild it under an edit made meanwhile.
              <LimitsForm
                id="tenant"
                key={`t-${tenant}`}
                name={tenantName}
                budget={one.tenant}
                currency={one.currency}
                save={(body) => api.call('PATCH', `/v1/admin/tenants/${encodeURIComponent(tenant)}/limits`, body)}
                onSaved={saved}
              />
            )}
          </div>
          <h2>Agents</h2>
          {one.agents.length === 0 && <p class="muted">No agent has a budget or used a model this month.</p>}
          <ul class="budget-list">
            {one.agents.map((a) => (
              <li key={a.agent} class="budget" data-testid={`budget-${a.agent}`}>
                <h3>{a.agent}</h3>
                <UseBars budget={a} currency={one.currency} warnAt={one.warn_at_percent} all />
                {!hasLimits(a) && <p class="muted">No budget of its own.</p>}
                {!admin && mayEdit && editing !== a.agent && (
                  <button type="button" class="small" onClick={() => setEditing(a.agent)}>
                    Edit budget of {a.agent}
                  </button>
                )}
                {!admin && mayEdit && editing === a.agent && (
                  <LimitsForm
                    id={`agent-${a.agent}`}
                    name={a.agent}
                    budget={a}
                    currency={one.currency}
                    save={(body) => api.call('PUT', `/v1/agents/${encodeURIComponent(a.agent)}/budget`, body)}
                    clear={() => api.call('DELETE', `/v1/agents/${encodeURIComponent(a.agent)}/budget`)}
                    onSaved={saved}
                    onCancel={() => setEditing(null)}
                  />
                )}
              </li>
            ))}
          </ul>
          {!admin && mayEdit && unbudgeted.length > 0 && (
            <div class="budget" data-testid="budget-new">
              <label for="budget-new-agent">Give an agent a budget</label>
              <select
                id="budget-new-agent"
                value={adding}
                onChange={(e) => {
                  setAdding(e.currentTarget.value);
                  setEditing(null);
                }}
              >
                <option value="">Choose an agent</option>
                {unbudgeted.map((a) => (
                  <option value={a} key={a}>
                    {a}
                  </option>
                ))}
              </select>
              {adding && (
                <LimitsForm
                  id={`new-${adding}`}
                  key={adding}
                  name={adding}
                  budget={{
                    limits: {
                      tokens_per_day: null,
                      tokens_per_month: null,
                      cost_per_day: null,
                      cost_per_month: null,
                      requests_per_day: null,
                      requests_per_month: null,
                    },
                    used: one.tenant.used,
                  }}
                  currency={one.currency}
                  save={(body) => api.call('PUT', `/v1/agents/${encodeURIComponent(adding)}/budget`, body)}
                  onSaved={saved}
                  onCancel={() => setAdding('')}
                />
              )}
            </div>
          )}
          {!admin && !mayEdit && (
            <p class="muted" data-testid="budgets-read-only">
              Setting an agent's budget needs the scope <code>agents:write</code>.
            </p>
          )}
          {admin && !mayEdit && <p class="muted">Read-only: an auditor cannot change budgets.</p>}
        </>
      )}
    </section>
  );
}
