import { useState } from 'preact/hooks';
import { useAccess } from './access';
import { q, type Api, type Page, type Tenant } from './api';
import { ShownOnce, Tokens } from './tokens';
import { ErrorBox, PageTitle, Pager, useLoad, usePager, When } from './ui';

export function Tenants(props: { api: Api }) {
  const { api } = props;
  const { adminWrite } = useAccess();
  const pager = usePager('tenants');
  const list = useLoad(
    (signal) => api.get<Page<Tenant>>(`/v1/admin/tenants${q({ limit: 25, cursor: pager.cursor })}`, signal),
    [pager.cursor],
  );
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ label: string; token: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);

  const create = async (e: Event): Promise<void> => {
    e.preventDefault();
    setError(null);
    try {
      const r = await api.call<{ tenant: Tenant; token: { token: string } }>('POST', '/v1/admin/tenants', {
        name: name.trim(),
      });
      setCreated({ label: `Tenant ${r.tenant.name} created.`, token: r.token.token });
      setName('');
      pager.first();
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const toggle = async (t: Tenant, cancelRunning = false): Promise<void> => {
    setError(null);
    try {
      await api.call('PATCH', `/v1/admin/tenants/${t.id}`, {
        disabled: !t.disabled,
        ...(cancelRunning ? { cancel_running: true } : {}),
      });
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section>
      <PageTitle>Tenants</PageTitle>
      {adminWrite ? (
        <form class="inline-form" onSubmit={(e) => void create(e)}>
          <label for="tenant-name">New tenant name</label>
          <input
            id="tenant-name"
            value={name}
            required
            maxLength={128}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <button type="submit" class="primary" disabled={!name.trim()}>
            Create tenant
          </button>
        </form>
      ) : (
        <p class="notice" data-testid="read-only">
          Read-only: an auditor sees tenants, tokens, the audit log and the registries, and changes nothing.
        </p>
      )}
      {created ? <ShownOnce {...created} onDone={() => setCreated(null)} /> : null}
      <ErrorBox error={error ?? list.error} />
      {list.data ? (
        <table>
          <caption class="sr-only">Tenants, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((t) => (
              <tr key={t.id} data-tenant={t.name}>
                <td>{t.name}</td>
                <td>
                  <code>{t.id}</code>
                </td>
                <td>{t.disabled ? 'disabled' : 'active'}</td>
                <td>
                  <When at={t.created_at} />
                </td>
                <td class="row-actions">
                  <button
                    type="button"
                    class="small"
                    aria-expanded={open === t.id}
                    onClick={() => setOpen(open === t.id ? null : t.id)}
                  >
                    Tokens <span class="sr-only">of {t.name}</span>
                  </button>
                  {adminWrite ? (
                    <button type="button" class="small" onClick={() => void toggle(t)}>
                      {t.disabled ? 'Enable' : 'Disable'} <span class="sr-only">{t.name}</span>
                    </button>
                  ) : null}
                  {adminWrite && !t.disabled ? (
                    <button type="button" class="small danger" onClick={() => void toggle(t, true)}>
                      Disable and cancel tasks <span class="sr-only">of {t.name}</span>
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {list.data ? <Pager pager={pager} nextCursor={list.data.next_cursor} /> : null}
      {open && list.data?.items.find((t) => t.id === open) ? (
        <Tokens api={api} tenant={list.data.items.find((t) => t.id === open) as Tenant} key={open} />
      ) : null}
    </section>
  );
}

interface Registry<T> {
  file: string;
  error: string | null;
  items: T[];
}
interface RemoteRow {
  name: string;
  url: string;
  card_url: string | null;
  auth: string;
  missing_env: string[];
}
interface McpRow {
  name: string;
  transport: string;
  description: string;
  url?: string;
  command?: string;
  args_count?: number;
  missing_env: string[];
}

function RegistryBlock<T extends { name: string; missing_env: string[] }>(props: {
  title: string;
  reg: ReturnType<typeof useLoad<Registry<T>>>;
  columns: { label: string; cell: (row: T) => string }[];
}) {
  const { reg } = props;
  return (
    <div class="registry">
      <h2>{props.title}</h2>
      <ErrorBox error={reg.error} />
      {reg.data ? (
        <>
          <p class="muted">
            File <code>{reg.data.file}</code>
          </p>
          {reg.data.error ? (
            <p class="error" role="alert">
              Load error (the previous registry stays in force): {reg.data.error}
            </p>
          ) : null}
          {reg.data.items.length === 0 ? (
            <p>None configured.</p>
          ) : (
            <table>
              <caption class="sr-only">{props.title}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  {props.columns.map((c) => (
                    <th scope="col" key={c.label}>
                      {c.label}
                    </th>
                  ))}
                  <th scope="col">Problems</th>
                </tr>
              </thead>
              <tbody>
                {reg.data.items.map((r) => (
                  <tr key={r.name}>
                    <td>{r.name}</td>
                    {props.columns.map((c) => (
                      <td key={c.label}>{c.cell(r)}</td>
                    ))}
                    <td class={r.missing_env.length ? 'error' : ''}>
                      {r.missing_env.length ? `unset: ${r.missing_env.join(', ')}` : 'none'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      ) : null}
    </div>
  );
}

export function Registries(props: { api: Api }) {
  const { api } = props;
  const remotes = useLoad((s) => api.get<Registry<RemoteRow>>('/v1/admin/registries/a2a-agents', s), []);
  const mcp = useLoad((s) => api.get<Registry<McpRow>>('/v1/admin/registries/mcp-servers', s), []);
  return (
    <section>
      <PageTitle>Registries</PageTitle>
      <p class="muted">
        As this server loaded them (read-only; edit the files, changes are picked up within seconds).{' '}
        <button
          type="button"
          onClick={() => {
            remotes.reload();
            mcp.reload();
          }}
        >
          Reload view
        </button>
      </p>
      <RegistryBlock
        title="Remote A2A agents"
        reg={remotes}
        columns={[
          { label: 'URL', cell: (r) => r.url },
          { label: 'Card URL', cell: (r) => r.card_url ?? '(looked up)' },
          { label: 'Auth', cell: (r) => r.auth },
        ]}
      />
      <RegistryBlock
        title="MCP servers"
        reg={mcp}
        columns={[
          { label: 'Transport', cell: (r) => r.transport },
          {
            label: 'Endpoint',
            cell: (r) => r.url ?? `${r.command ?? ''}${r.args_count ? ` (+${r.args_count} args)` : ''}`,
          },
          { label: 'Description', cell: (r) => r.description },
        ]}
      />
    </section>
  );
}
