import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  BUDGET_KEYS,
  q,
  type Api,
  type Budget,
  type BudgetKey,
  type BudgetLimits,
  type Budgets,
  type Tenant,
} from './api';
import { round } from './charts';
import { ErrorBox, PageTitle, useLoad } from './ui';

export const budgetsPath = (admin: boolean, tenant: string): string =>
  admin ? `/v1/admin/budgets${q({ tenant })}` : '/v1/budgets';

const LABELS: Record<BudgetKey, string> = {
  tokens_per_day: 'Tokens per day',
  tokens_per_month: 'Tokens per month',
  cost_per_day: 'Cost per day',
  cost_per_month: 'Cost per month',
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

/** Used against limit: a `<meter>` (it turns amber at the warning threshold, red at the limit). */
function Use(props: { label: string; used: number; limit: number | null; warnAt: number; unit: string }) {
  if (props.limit === null) return null;
  const text = `${round(props.used)} of ${round(props.limit)}${props.unit}`;
  return (
    <div class="use">
      <span class="bar-label">{props.label}</span>
      <meter
        min={0}
        max={props.limit}
        value={Math.min(props.used, props.limit)}
        low={(props.limit * props.warnAt) / 100}
        high={props.limit * 0.999}
        optimum={0}
        aria-label={`${props.label}: ${text}`}
      />
      <span class="bar-value">{text}</span>
    </div>
  );
}

function UseBars(props: { budget: Budget; budgets: Budgets }) {
  const { budget, budgets } = props;
  const cur = budgets.currency ? ` ${budgets.currency}` : '';
  const w = budgets.warn_at_percent;
  return (
    <>
      <Use label="Tokens today" used={budget.used.day.tokens} limit={budget.limits.tokens_per_day} warnAt={w} unit="" />
      <Use
        label="Tokens this month"
        used={budget.used.month.tokens}
        limit={budget.limits.tokens_per_month}
        warnAt={w}
        unit=""
      />
      <Use label="Cost today" used={budget.used.day.cost} limit={budget.limits.cost_per_day} warnAt={w} unit={cur} />
      <Use
        label="Cost this month"
        used={budget.used.month.cost}
        limit={budget.limits.cost_per_month}
        warnAt={w}
        unit={cur}
      />
    </>
  );
}

/** The overview's budget chart: each agent's use against its limits. */
export function BudgetBars(props: { budgets: Budgets; rows: Budgets['agents'] }) {
  return (
    <ul class="bars budgets">
      {props.rows.map((a) => (
        <li key={a.agent}>
          <strong>{a.agent}</strong>
          <UseBars budget={a} budgets={props.budgets} />
        </li>
      ))}
    </ul>
  );
}

/** A 400's `details`, by field: `[{field, message}]` or Arbiter's `[{field, messages}]`. */
const fieldErrors = (err: unknown): Partial<Record<string, string>> => {
  if (!(err instanceof ApiError) || err.status !== 400) return {};
  const out: Record<string, string> = {};
  for (const d of err.details as { field: string; messages?: string[]; message?: string }[]) {
    const key = d.field.split('.').pop() ?? d.field;
    out[key] = d.message ?? d.messages?.join('; ') ?? 'invalid';
  }
  return out;
};

/** The four limits as a form: empty clears one; a 400's details are shown on their fields. */
function LimitsForm(props: {
  id: string;
  limits: BudgetLimits;
  save: (body: Record<BudgetKey, number | null>) => Promise<unknown>;
  clear?: () => Promise<unknown>;
  onSaved: () => void;
}) {
  const [values, setValues] = useState<Record<BudgetKey, string>>(
    () =>
      Object.fromEntries(
        BUDGET_KEYS.map((k) => [k, props.limits[k] === null ? '' : String(props.limits[k])]),
      ) as Record<BudgetKey, string>,
  );
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const errors = fieldErrors(error);
  const run = async (op: () => Promise<unknown>): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await op();
      props.onSaved();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: Event): void => {
    e.preventDefault();
    const body = Object.fromEntries(
      BUDGET_KEYS.map((k) => [k, values[k].trim() === '' ? null : Number(values[k])]),
    ) as Record<BudgetKey, number | null>;
    void run(() => props.save(body));
  };
  return (
    <form class="limits" onSubmit={submit} aria-label={`Budget of ${props.id}`}>
      <div class="field-row">
        {BUDGET_KEYS.map((k) => (
          <div class="field" key={k}>
            <label for={`${props.id}-${k}`}>{LABELS[k]}</label>
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
      {Object.keys(errors).length === 0 && <ErrorBox error={error} />}
      <button type="submit" disabled={busy}>
        Save
      </button>{' '}
      {props.clear && (
        <button type="button" disabled={busy} onClick={() => void run(props.clear!)}>
          Remove budget
        </button>
      )}
    </form>
  );
}

/** The budgets page: the tenant's budget and each agent's, used against limit; editable where the credential may. */
export function BudgetsPage(props: { api: Api; admin: boolean; mayEdit: boolean }) {
  const { api, admin } = props;
  const [tenant, setTenant] = useState('');
  const tenants = useLoad<Tenant[]>(
    async (signal) => (admin ? (await api.get<{ items: Tenant[] }>('/v1/admin/tenants?limit=200', signal)).items : []),
    [],
  );
  const budgets = useLoad<Budgets | null>(
    (signal) => (admin && !tenant ? Promise.resolve(null) : api.get<Budgets>(budgetsPath(admin, tenant), signal)),
    [tenant],
  );
  const [editing, setEditing] = useState<string | null>(null);
  const b = budgets.data;
  const saved = (): void => {
    setEditing(null);
    budgets.reload();
  };
  return (
    <section>
      <PageTitle>Budgets</PageTitle>
      <p class="muted">
        Limits per UTC day and month, in tokens or in cost{b?.currency ? ` (${b.currency})` : ''}. A run that would pass
        one is refused, or stopped between model calls.
      </p>
      {admin && (
        <label>
          Tenant{' '}
          <select value={tenant} onChange={(e) => setTenant(e.currentTarget.value)}>
            <option value="">Choose a tenant</option>
            {(tenants.data ?? []).map((t) => (
              <option value={t.id} key={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <ErrorBox error={budgets.error} />
      {b && (
        <>
          <h2>Tenant</h2>
          <div class="budget" data-testid="budget-tenant">
            <UseBars budget={b.tenant} budgets={b} />
            {!Object.values(b.tenant.limits).some((v) => v !== null) && <p class="muted">No tenant budget.</p>}
            {admin && props.mayEdit && (
              <LimitsForm
                id="tenant"
                key={`t-${tenant}`}
                limits={b.tenant.limits}
                save={(body) => api.call('PATCH', `/v1/admin/tenants/${encodeURIComponent(tenant)}/limits`, body)}
                onSaved={saved}
              />
            )}
          </div>
          <h2>Agents</h2>
          {b.agents.length === 0 && <p class="muted">No agent has a budget yet.</p>}
          <ul class="budget-list">
            {b.agents.map((a) => (
              <li key={a.agent} class="budget" data-testid={`budget-${a.agent}`}>
                <h3>{a.agent}</h3>
                <UseBars budget={a} budgets={b} />
                {!Object.values(a.limits).some((v) => v !== null) && <p class="muted">No limit.</p>}
                {!admin && props.mayEdit && editing !== a.agent && (
                  <button type="button" class="small" onClick={() => setEditing(a.agent)}>
                    Edit budget of {a.agent}
                  </button>
                )}
                {!admin && editing === a.agent && (
                  <LimitsForm
                    id={`agent-${a.agent}`}
                    limits={a.limits}
                    save={(body) => api.call('PUT', `/v1/agents/${encodeURIComponent(a.agent)}/budget`, body)}
                    clear={() => api.call('DELETE', `/v1/agents/${encodeURIComponent(a.agent)}/budget`)}
                    onSaved={saved}
                  />
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
