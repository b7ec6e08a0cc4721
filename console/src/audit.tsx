import { useEffect, useState } from 'preact/hooks';
import { q, type Api, type AuditEntry, type Page, type Tenant } from './api';
import { ErrorBox, PageTitle, Pager, shortId, useLoad, usePager, When } from './ui';

const str = (v: unknown): string =>
  v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v);
const short = (v: unknown): string => `…${shortId(str(v))}`;
const fieldName = (k: string): string => k.replace(/_/g, ' ');

/** A quota override as the admin set it: null restores the default, 0 is unlimited. */
const limit = (v: unknown): string => (v === null ? 'default' : v === 0 ? 'unlimited' : str(v));

/**
 * An audit entry's detail as readable lines: what changed, as `field: old → new` where the entry implies the old
 * value (enable/disable), `field → new` where the log keeps only the new one (quota overrides), and the ids and
 * token prefixes it names. Tokens themselves are never in the log.
 */
export function auditChanges(a: AuditEntry): string[] {
  const d = a.detail;
  const by = typeof d.token_prefix === 'string' && a.actor === 'tenant' ? [`by token ${d.token_prefix}…`] : [];
  switch (a.action) {
    case 'tenant.create':
      return [`name: ${str(d.name)}`, `first token: ${str(d.token_prefix)}…`];
    case 'tenant.disable':
      return ['status: active → disabled'];
    case 'tenant.enable':
      return ['status: disabled → active'];
    case 'tenant.cancel_running':
      return [`running tasks → canceled: ${str(d.canceled_tasks)}`];
    case 'tenant.limits':
      return Object.entries(d).map(([k, v]) => `${fieldName(k)} → ${limit(v)}`);
    case 'token.create':
      return [`new token: ${str(d.token_prefix)}…`];
    case 'token.rotate': {
      const revoked = Array.isArray(d.revoked_token_ids) ? d.revoked_token_ids.length : 0;
      return [`new token: ${str(d.token_prefix)}…`, `revoked: ${revoked} other token${revoked === 1 ? '' : 's'}`];
    }
    case 'token.revoke':
      return [`token ${short(d.token_id)}: active → revoked`];
    case 'task.cancel':
      return [`task ${short(d.task_id)} (agent ${str(d.agent_id)}): state → canceled`];
    case 'agent.create':
      return [`agent ${str(d.agent_id)} created`, ...by];
    case 'agent.update': {
      const fields = Array.isArray(d.fields) ? d.fields.map(str).join(', ') : '';
      return [`agent ${str(d.agent_id)}: changed ${fields || 'nothing'}`, ...by];
    }
    case 'agent.delete':
      return [`agent ${str(d.agent_id)} deleted`, ...by];
    default:
      return Object.entries(d).map(([k, v]) => `${fieldName(k)}: ${str(v)}`);
  }
}

/** Tenant names for the ids on a page, each read once (`GET /v1/admin/tenants/:id`); null: no such tenant. */
function useTenantNames(api: Api, ids: string[]): Map<string, string | null> {
  const [names, setNames] = useState<Map<string, string | null>>(new Map());
  const wanted = [...new Set(ids)].sort();
  const key = wanted.join(',');
  useEffect(() => {
    const missing = wanted.filter((id) => !names.has(id));
    if (missing.length === 0) return;
    const ctl = new AbortController();
    void Promise.all(
      missing.map((id) =>
        api.get<Tenant>(`/v1/admin/tenants/${encodeURIComponent(id)}`, ctl.signal).then(
          (t) => [id, t.name] as const,
          () => [id, null] as const,
        ),
      ),
    ).then((found) => {
      if (ctl.signal.aborted) return;
      setNames((prev) => new Map([...prev, ...found]));
    });
    return () => ctl.abort();
  }, [key]);
  return names;
}

function TenantCell(props: { id: string | null; names: Map<string, string | null> }) {
  const { id, names } = props;
  if (!id) return <span class="muted">—</span>;
  const name = names.get(id);
  return name ? (
    <span title={id} data-tenant-id={id}>
      {name}
    </span>
  ) : (
    <code title={id}>{id.slice(0, 8)}…</code>
  );
}

export function Audit(props: { api: Api }) {
  const { api } = props;
  const [tenantId, setTenantId] = useState('');
  const [applied, setApplied] = useState('');
  const pager = usePager(applied);
  const list = useLoad(
    (signal) =>
      api.get<Page<AuditEntry>>(`/v1/admin/audit${q({ tenant_id: applied, limit: 50, cursor: pager.cursor })}`, signal),
    [applied, pager.cursor],
  );
  const names = useTenantNames(
    api,
    (list.data?.items ?? []).flatMap((a) => (a.tenant_id ? [a.tenant_id] : [])),
  );
  return (
    <section>
      <PageTitle>Audit log</PageTitle>
      <form
        class="inline-form"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(tenantId.trim());
        }}
      >
        <label for="audit-tenant">Tenant id</label>
        <input id="audit-tenant" value={tenantId} onInput={(e) => setTenantId(e.currentTarget.value)} />
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={list.error} />
      {list.data ? (
        <table>
          <caption class="sr-only">Audit entries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Tenant</th>
              <th scope="col">What changed</th>
              <th scope="col">Request</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((a) => (
              <tr key={a.id} data-action={a.action}>
                <td>
                  <When at={a.created_at} />
                </td>
                <td data-testid="audit-actor">
                  {a.actor}
                  {a.actor_id ? (
                    <>
                      <br />
                      <code>{a.actor_id}</code>
                    </>
                  ) : null}
                </td>
                <td>{a.action}</td>
                <td data-testid="audit-tenant">
                  <TenantCell id={a.tenant_id} names={names} />
                </td>
                <td data-testid="audit-changes">
                  <ul class="changes">
                    {auditChanges(a).map((line) => (
                      <li key={line}>{line}</li>
                    ))}
                  </ul>
                </td>
                <td>
                  <code>{a.request_id?.slice(0, 8) ?? ''}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {list.data ? <Pager pager={pager} nextCursor={list.data.next_cursor} /> : null}
    </section>
  );
}
