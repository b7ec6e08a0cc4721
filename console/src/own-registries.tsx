import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { useAccess } from './access';
import { ApiError, type Api } from './api';
import { navigate } from './router';
import { ErrorBox, Link, PageTitle, useLoad, When } from './ui';

/**
 * A tenant's own remote A2A agents (`/v1/remote-agents`) and MCP servers (`/v1/mcp-servers`): list, create, edit,
 * delete. Secrets are write-only: reads show them as `"set"`, the form never fills them in. `PATCH` replaces `auth`
 * (and an MCP server's `headers`) whole, so the form leaves them out unless they are changed, and then asks for
 * every secret again; so it does when the entry's url is pointed at another origin, where the server keeps no
 * stored secret.
 */
export type RegistryKind = 'remote-agents' | 'mcp-servers';

interface KindInfo {
  path: string;
  title: string;
  one: string;
  /** The entry's plain fields beside `name`, `url`, `auth` (and an MCP server's `headers`). */
  extra: { key: string; label: string; hint: string }[];
}

export const KINDS: Record<RegistryKind, KindInfo> = {
  'remote-agents': {
    path: '/remote-agents',
    title: 'Remote agents',
    one: 'remote agent',
    extra: [{ key: 'card_url', label: 'Card URL', hint: 'where its agent card is, when not at <url>/agent-card.json' }],
  },
  'mcp-servers': {
    path: '/mcp-servers',
    title: 'MCP servers',
    one: 'MCP server',
    extra: [{ key: 'description', label: 'Description', hint: 'one line for the roster and /mcp list' }],
  },
};

export interface Entry {
  name: string;
  url: string;
  card_url?: string;
  description?: string;
  headers?: Record<string, string>;
  auth?: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

type AuthType = 'none' | 'bearer' | 'header' | 'oauth2_client_credentials' | 'mtls' | 'token_exchange';

/** One field of a credential: its key in `auth`, whether it is a secret (write-only) and how it is typed. */
interface AuthField {
  key: string;
  label: string;
  hint?: string;
  secret?: boolean;
  required?: boolean;
  kind?: 'pem' | 'bool' | 'client_auth';
}

const OAUTH: AuthField[] = [
  { key: 'token_url', label: 'Token URL', required: true },
  { key: 'client_id', label: 'Client id', required: true },
  { key: 'client_secret', label: 'Client secret', secret: true, required: true },
  { key: 'scopes', label: 'Scopes', hint: 'space-separated' },
  { key: 'audience', label: 'Audience' },
  { key: 'resource', label: 'Resource', hint: 'an absolute URI (RFC 8707)' },
  { key: 'client_auth', label: 'Client authentication', kind: 'client_auth' },
];

export const AUTH_FIELDS: Record<AuthType, AuthField[]> = {
  none: [],
  bearer: [{ key: 'token', label: 'Token', secret: true, required: true }],
  header: [
    { key: 'name', label: 'Header name', required: true, hint: 'e.g. X-Api-Key' },
    { key: 'value', label: 'Header value', secret: true, required: true },
  ],
  oauth2_client_credentials: OAUTH,
  mtls: [
    { key: 'cert', label: 'Client certificate (PEM)', kind: 'pem', required: true },
    { key: 'key', label: 'Private key (PEM)', kind: 'pem', secret: true, required: true },
    { key: 'ca', label: 'CA certificate (PEM)', kind: 'pem', hint: 'when the remote’s certificate has a private CA' },
  ],
  token_exchange: [
    ...OAUTH,
    { key: 'actor_token', label: 'Send Arbiter’s own token as the actor token', kind: 'bool' },
  ],
};

const AUTH_LABELS: Record<AuthType, string> = {
  none: 'none',
  bearer: 'bearer token',
  header: 'API key header',
  oauth2_client_credentials: 'OAuth client credentials',
  mtls: 'mTLS client certificate',
  token_exchange: 'token exchange (on behalf of the caller)',
};

const authTypeOf = (auth: Record<string, unknown> | undefined): AuthType =>
  auth ? ((typeof auth.type === 'string' ? auth.type : 'bearer') as AuthType) : 'none';

/** An entry's `auth` as text for the list: its type and each secret as "set". */
function authSummary(auth: Record<string, unknown> | undefined): ComponentChildren {
  const type = authTypeOf(auth);
  if (!auth || type === 'none') return <span class="muted">none</span>;
  const secrets = Object.entries(auth).filter(([k, v]) => k !== 'type' && v === 'set');
  return (
    <>
      <code data-testid="auth-type">{type}</code>
      {secrets.map(([k]) => (
        <span key={k} class="secret-set">
          {' '}
          {k}: <em>set</em>
        </span>
      ))}
    </>
  );
}

export function RegistryList(props: { api: Api; kind: RegistryKind }) {
  const info = KINDS[props.kind];
  const access = useAccess();
  const { data, error, loading } = useLoad(
    (signal) => props.api.get<{ items: Entry[] }>(`/v1${info.path}`, signal),
    [props.kind],
  );
  return (
    <section>
      <PageTitle>{info.title}</PageTitle>
      <p class="muted">
        This tenant’s own {info.title.toLowerCase()}; one shadows the operator’s shared entry of the same name.
      </p>
      {access.writeAgents ? (
        <p>
          <Link to={`${info.path}/new`} class="button primary">
            New {info.one}
          </Link>
        </p>
      ) : (
        <p class="muted" data-testid="read-only">
          Read-only: adding, editing and deleting them needs the scope <code>agents:write</code>.
        </p>
      )}
      <ErrorBox error={error} />
      {loading && !data ? <p aria-live="polite">Loading…</p> : null}
      {data && data.items.length === 0 ? <p>None yet.</p> : null}
      {data && data.items.length > 0 ? (
        <table>
          <caption class="sr-only">{info.title} of this tenant</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">URL</th>
              <th scope="col">Credentials</th>
              {props.kind === 'mcp-servers' ? <th scope="col">Headers</th> : null}
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((e) => (
              <tr key={e.name} data-entry={e.name}>
                <td>
                  <Link to={`${info.path}/${encodeURIComponent(e.name)}`}>{e.name}</Link>
                </td>
                <td>
                  <code>{e.url}</code>
                </td>
                <td>{authSummary(e.auth)}</td>
                {props.kind === 'mcp-servers' ? (
                  <td>
                    {Object.keys(e.headers ?? {}).map((h) => (
                      <span key={h} class="secret-set">
                        {h}: <em>set</em>{' '}
                      </span>
                    ))}
                  </td>
                ) : null}
                <td>
                  <When at={e.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

export function NewRegistryEntry(props: { api: Api; kind: RegistryKind }) {
  return (
    <section>
      <PageTitle>New {KINDS[props.kind].one}</PageTitle>
      <RegistryForm api={props.api} kind={props.kind} />
    </section>
  );
}

export function RegistryEntryPage(props: { api: Api; kind: RegistryKind; name: string }) {
  const { api, kind, name } = props;
  const info = KINDS[kind];
  const access = useAccess();
  const url = `/v1${info.path}/${encodeURIComponent(name)}`;
  const entry = useLoad((signal) => api.get<Entry>(url, signal), [kind, name]);
  const [deleteError, setDeleteError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const remove = async (): Promise<void> => {
    if (!confirm(`Delete ${info.one} ${name}?`)) return;
    try {
      await api.call('DELETE', url);
      navigate(info.path);
    } catch (err) {
      setDeleteError(err);
    }
  };
  const e = entry.data;
  return (
    <section>
      <PageTitle>
        {info.one[0]?.toUpperCase()}
        {info.one.slice(1)} {name}
      </PageTitle>
      <p>
        <Link to={info.path}>All {info.title.toLowerCase()}</Link>
      </p>
      <ErrorBox error={entry.error} />
      {e ? (
        access.writeAgents ? (
          <>
            <p class="actions">
              <button type="button" class="danger" onClick={() => void remove()}>
                Delete {info.one}
              </button>
            </p>
            <ErrorBox error={deleteError} />
            {saved ? (
              <p class="ok" role="status">
                Saved.
              </p>
            ) : null}
            <RegistryForm
              api={api}
              kind={kind}
              entry={e}
              key={e.updated_at}
              onEdit={() => setSaved(false)}
              onSaved={(updated) => {
                // The entry as saved replaces the form in the same render as "Saved.": nothing typed after it is
                // lost to a reload that lands later.
                entry.set(updated);
                setSaved(true);
              }}
            />
          </>
        ) : (
          <>
            <p class="muted" data-testid="read-only">
              Read-only: editing needs the scope agents:write. Secrets show as “set”.
            </p>
            <pre tabIndex={0}>{JSON.stringify(e, null, 2)}</pre>
          </>
        )
      ) : null}
    </section>
  );
}

type Values = Record<string, string>;

const textOf = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The stored entry's credential as form values: its plain fields; secrets (shown as "set") left empty. */
function authValues(auth: Record<string, unknown> | undefined): Values {
  const out: Values = {};
  const type = authTypeOf(auth);
  for (const f of AUTH_FIELDS[type]) {
    const v = auth?.[f.key];
    if (f.secret || v === undefined || v === null) continue;
    if (Array.isArray(v)) out[f.key] = v.join(' ');
    else if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') out[f.key] = String(v);
  }
  return out;
}

/** The credential the form describes, as `auth`; `null` for none. */
function authBody(type: AuthType, v: Values): Record<string, unknown> | null {
  if (type === 'none') return null;
  const out: Record<string, unknown> = { type };
  for (const f of AUTH_FIELDS[type]) {
    const s = v[f.key] ?? '';
    if (f.kind === 'bool') {
      if (s === 'true') out[f.key] = true;
    } else if (s.trim() !== '') out[f.key] = f.kind === 'pem' ? s : s.trim();
  }
  return out;
}

interface HeaderRow {
  name: string;
  value: string;
}

/** Server field names (`auth.token`, `headers.x-api-key`, `url`) → the form field they belong to. */
function fieldOf(field: string): string {
  const f = field.replace(/^entry\./, '');
  if (f.startsWith('auth.')) return `auth.${f.slice(5).split(/[.[]/)[0] ?? ''}`;
  if (f.startsWith('headers')) return 'headers';
  return f.split(/[.[]/)[0] ?? f;
}

const fid = (k: string): string => `r-${k.replace(/\./g, '-')}`;

/** The origin of a URL field's value ('' when empty; the text itself when it is no URL). */
function originOf(value: string | undefined): string {
  if (!value?.trim()) return '';
  try {
    return new URL(value.trim()).origin;
  } catch {
    return value.trim();
  }
}

/** Whether the edited `url` points the entry at another origin (where the server keeps no stored secret). */
function moves(entry: Entry, edited: Values): boolean {
  return originOf(edited.url) !== originOf(entry.url);
}

/** The form that adds an entry or edits one; a 400's `details` shown on their fields. */
export function RegistryForm(props: {
  api: Api;
  kind: RegistryKind;
  entry?: Entry;
  onEdit?: () => void;
  onSaved?: (updated: Entry) => void;
}) {
  const { api, kind, entry } = props;
  const info = KINDS[kind];
  const editing = entry !== undefined;
  const [name, setName] = useState(entry?.name ?? '');
  const [plain, setPlain] = useState<Values>(() => {
    const v: Values = { url: entry?.url ?? '' };
    for (const f of info.extra) v[f.key] = textOf((entry as Record<string, unknown> | undefined)?.[f.key]);
    return v;
  });
  const storedType = authTypeOf(entry?.auth);
  const storedAuth = authValues(entry?.auth);
  const [type, setType] = useState<AuthType>(storedType);
  const [auth, setAuth] = useState<Values>(storedAuth);
  const storedHeaders = Object.keys(entry?.headers ?? {});
  const [headers, setHeaders] = useState<HeaderRow[]>(storedHeaders.map((h) => ({ name: h, value: '' })));
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [formError, setFormError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  // On edit the credential is sent only when something in it changed: then whole, every secret given again.
  const authChanged =
    !editing ||
    type !== storedType ||
    AUTH_FIELDS[type].some((f) =>
      f.secret ? (auth[f.key] ?? '') !== '' : (auth[f.key] ?? '') !== (storedAuth[f.key] ?? ''),
    );
  const headersChanged =
    !editing ||
    headers.length !== storedHeaders.length ||
    headers.some((h, i) => h.name !== storedHeaders[i] || h.value !== '');

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setErrors({});
    setFormError(null);
    props.onEdit?.();
    // Secrets the server no longer has once the credential is replaced: asked for here, before the call.
    const missing: Record<string, string[]> = {};
    if (authChanged && type !== 'none') {
      for (const f of AUTH_FIELDS[type]) {
        if (f.secret && f.required && !(auth[f.key] ?? '')) {
          missing[`auth.${f.key}`] = [
            editing
              ? `${f.label} must be given again: changing the credentials replaces them whole`
              : `${f.label} is required`,
          ];
        }
      }
    }
    // Pointed at another origin, the entry keeps no stored secret (the server refuses it): each is asked for again.
    if (editing && moves(entry, plain)) {
      const secret = AUTH_FIELDS[storedType].find((f) => f.secret);
      if (!authChanged && secret) {
        missing[`auth.${secret.key}`] = [
          `${secret.label} must be given again: the url now points at another origin, and a stored secret goes only where it went before (or choose no credentials)`,
        ];
      }
      if (kind === 'mcp-servers' && !headersChanged && storedHeaders.length > 0) {
        missing.headers = [
          'every header value must be given again: the url now points at another origin, and stored values go only where they went before',
        ];
      }
    }
    if (kind === 'mcp-servers' && headersChanged && headers.some((h) => h.name.trim() && !h.value)) {
      missing.headers = [
        editing
          ? 'every header value must be given again: changing the headers replaces them whole'
          : 'every header needs a value',
      ];
    }
    if (Object.keys(missing).length > 0) {
      setErrors(missing);
      document.getElementById(fid(Object.keys(missing)[0] ?? ''))?.focus();
      return;
    }
    const body: Record<string, unknown> = { url: plain.url?.trim() ?? '' };
    for (const f of info.extra) {
      const s = (plain[f.key] ?? '').trim();
      if (s !== '') body[f.key] = s;
      else if (editing && (entry as unknown as Record<string, unknown>)[f.key] !== undefined) body[f.key] = null;
    }
    if (authChanged) {
      const a = authBody(type, auth);
      if (a) body.auth = a;
      else if (editing) body.auth = null;
    }
    if (kind === 'mcp-servers' && headersChanged) {
      const rows = headers.filter((h) => h.name.trim());
      if (rows.length > 0) body.headers = Object.fromEntries(rows.map((h) => [h.name.trim(), h.value]));
      else if (editing) body.headers = null;
    }
    setBusy(true);
    try {
      if (editing) {
        const updated = await api.call<Entry>('PATCH', `/v1${info.path}/${encodeURIComponent(name)}`, body);
        props.onSaved?.(updated);
      } else {
        const created = await api.call<Entry>('POST', `/v1${info.path}`, { name: name.trim(), ...body });
        navigate(`${info.path}/${encodeURIComponent(created.name)}`);
      }
    } catch (err) {
      if (err instanceof ApiError && err.details.length > 0) {
        const known = new Set([
          'name',
          'url',
          'headers',
          ...info.extra.map((f) => f.key),
          ...AUTH_FIELDS[type].map((f) => `auth.${f.key}`),
        ]);
        const byField: Record<string, string[]> = {};
        const rest: string[] = [];
        for (const d of err.details) {
          let f = fieldOf(d.field);
          if (!known.has(f) && f.startsWith('auth')) f = 'auth.type';
          if (known.has(f) || f === 'auth.type') byField[f] = [...(byField[f] ?? []), ...d.messages];
          else rest.push(`${d.field}: ${d.messages.join('; ')}`);
        }
        setErrors(byField);
        setFormError(rest.length > 0 ? new Error(rest.join('\n')) : err);
        const first = Object.keys(byField)[0];
        if (first) document.getElementById(fid(first))?.focus();
      } else setFormError(err);
    } finally {
      setBusy(false);
    }
  };

  const fieldProps = (k: string) => ({
    id: fid(k),
    name: k,
    'aria-invalid': errors[k] ? true : undefined,
    'aria-describedby': `${fid(k)}-hint${errors[k] ? ` ${fid(k)}-err` : ''}`,
  });
  const hint = (k: string, text: string) => (
    <>
      <small id={`${fid(k)}-hint`} class="hint">
        {text}
      </small>
      {errors[k] ? (
        <ul id={`${fid(k)}-err`} class="field-error" data-field={k}>
          {errors[k].map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      ) : null}
    </>
  );
  const secretHint = (f: AuthField): string =>
    editing && type === storedType
      ? 'write-only: set, not shown; leave empty to keep the stored credentials (when nothing else here changes)'
      : `write-only: stored sealed, never shown again${f.hint ? `; ${f.hint}` : ''}`;

  return (
    <form onSubmit={(e) => void submit(e)} class="agent-form registry-form" noValidate>
      <div class="field">
        <label for={fid('name')}>Name</label>
        <input
          {...fieldProps('name')}
          value={name}
          readOnly={editing}
          required
          onInput={(e) => setName(e.currentTarget.value)}
        />
        {hint('name', 'letters, digits, _ . and -, up to 64; cannot change later')}
      </div>
      <div class="field">
        <label for={fid('url')}>URL</label>
        <input
          {...fieldProps('url')}
          value={plain.url ?? ''}
          required
          onInput={(e) => {
            const value = e.currentTarget.value;
            setPlain((p) => ({ ...p, url: value }));
          }}
        />
        {hint('url', kind === 'remote-agents' ? 'the remote’s JSON-RPC endpoint' : 'the streamable-HTTP endpoint')}
      </div>
      {info.extra.map((f) => (
        <div class="field" key={f.key}>
          <label for={fid(f.key)}>{f.label}</label>
          <input
            {...fieldProps(f.key)}
            value={plain[f.key] ?? ''}
            onInput={(e) => {
              const value = e.currentTarget.value;
              setPlain((p) => ({ ...p, [f.key]: value }));
            }}
          />
          {hint(f.key, f.hint)}
        </div>
      ))}
      <fieldset class="auth-fields">
        <legend>Credentials</legend>
        {editing ? (
          <p class="notice" data-testid="secrets-note">
            Secrets are never shown. Leave them empty to keep the stored credentials as they are. Changing anything
            here, or pointing the URL at another origin, replaces the credentials whole, so every secret must be given
            again.
          </p>
        ) : null}
        <div class="field">
          <label for={fid('auth.type')}>Type</label>
          <select
            {...fieldProps('auth.type')}
            value={type}
            onChange={(e) => {
              const t = e.currentTarget.value as AuthType;
              setType(t);
              setAuth(t === storedType ? storedAuth : {});
            }}
          >
            {(Object.keys(AUTH_FIELDS) as AuthType[]).map((t) => (
              <option key={t} value={t}>
                {AUTH_LABELS[t]}
              </option>
            ))}
          </select>
          {hint('auth.type', 'how Arbiter authenticates to it')}
        </div>
        {AUTH_FIELDS[type].map((f) => {
          const k = `auth.${f.key}`;
          const value = auth[f.key] ?? '';
          const set = (v: string): void => setAuth((a) => ({ ...a, [f.key]: v }));
          return (
            <div class="field" key={k}>
              {f.kind === 'bool' ? (
                <label>
                  <input
                    type="checkbox"
                    {...fieldProps(k)}
                    checked={value === 'true'}
                    onChange={(e) => set(e.currentTarget.checked ? 'true' : '')}
                  />{' '}
                  {f.label}
                </label>
              ) : (
                <label for={fid(k)}>{f.label}</label>
              )}
              {f.kind === 'bool' ? null : f.kind === 'client_auth' ? (
                <select {...fieldProps(k)} value={value} onChange={(e) => set(e.currentTarget.value)}>
                  <option value="">HTTP Basic (default)</option>
                  <option value="basic">basic</option>
                  <option value="post">post (in the form)</option>
                </select>
              ) : f.kind === 'pem' ? (
                <textarea
                  {...fieldProps(k)}
                  rows={4}
                  class={f.secret ? 'secret-text' : undefined}
                  autocomplete="off"
                  spellcheck={false}
                  value={value}
                  onInput={(e) => set(e.currentTarget.value)}
                />
              ) : f.secret ? (
                <input
                  {...fieldProps(k)}
                  type="password"
                  autocomplete="new-password"
                  placeholder={editing && type === storedType ? 'set (unchanged)' : undefined}
                  value={value}
                  onInput={(e) => set(e.currentTarget.value)}
                />
              ) : (
                <input {...fieldProps(k)} value={value} onInput={(e) => set(e.currentTarget.value)} />
              )}
              {hint(k, f.secret ? secretHint(f) : (f.hint ?? (f.required ? 'required' : 'optional')))}
            </div>
          );
        })}
      </fieldset>
      {kind === 'mcp-servers' ? (
        <fieldset class="auth-fields">
          <legend>Headers</legend>
          <p class="muted">
            Sent on every request; their values are write-only. Changing any header replaces them all, so every value
            must be given again.
          </p>
          {headers.map((h, i) => (
            <div class="field-row" key={i}>
              <div class="field">
                <label for={`r-header-name-${i}`}>Header {i + 1} name</label>
                <input
                  id={`r-header-name-${i}`}
                  value={h.name}
                  onInput={(e) => {
                    const value = e.currentTarget.value;
                    setHeaders((hs) => hs.map((x, j) => (j === i ? { ...x, name: value } : x)));
                  }}
                />
              </div>
              <div class="field">
                <label for={`r-header-value-${i}`}>Header {i + 1} value</label>
                <input
                  id={`r-header-value-${i}`}
                  type="password"
                  autocomplete="new-password"
                  placeholder={editing && storedHeaders[i] === h.name ? 'set (unchanged)' : undefined}
                  value={h.value}
                  onInput={(e) => {
                    const value = e.currentTarget.value;
                    setHeaders((hs) => hs.map((x, j) => (j === i ? { ...x, value } : x)));
                  }}
                />
              </div>
              <button
                type="button"
                class="small"
                onClick={() => setHeaders((hs) => hs.filter((_, j) => j !== i))}
                aria-label={`Remove header ${i + 1}`}
              >
                Remove
              </button>
            </div>
          ))}
          <p>
            <button type="button" class="small" onClick={() => setHeaders((hs) => [...hs, { name: '', value: '' }])}>
              Add header
            </button>
          </p>
          <div id={fid('headers')} tabIndex={-1}>
            {hint('headers', 'header names as HTTP has them (not Host, Content-Type …)')}
          </div>
        </fieldset>
      ) : null}
      <ErrorBox error={formError} />
      <button type="submit" class="primary" disabled={busy}>
        {editing ? 'Save changes' : `Add ${info.one}`}
      </button>
    </form>
  );
}
