import type { TargetedEvent } from 'preact';
import { useState } from 'preact/hooks';
import { agentSnippets } from '../../src/console/agent-snippets';
import { NEEDS, useAccess } from './access';
import { ApiError, q, type Agent, type Api, type Constitution, type Page } from './api';
import { navigate } from './router';
import { Copyable, ErrorBox, Link, NotAllowed, PageTitle, Pager, useLoad, usePager, When } from './ui';

/** For a credential that may call agents but not list them (`a2a:invoke` only): open one by its id. */
export function OpenAgent() {
  const [id, setId] = useState('');
  const open = (e: Event): void => {
    e.preventDefault();
    if (id.trim()) navigate(`/agents/${encodeURIComponent(id.trim())}/chat`);
  };
  return (
    <section>
      <PageTitle>Agents</PageTitle>
      <NotAllowed what="Listing agents" scopes={NEEDS.readAgents} />
      <p>It may call an agent whose id you know.</p>
      <form class="inline-form" onSubmit={open}>
        <label for="open-agent">Agent id</label>
        <input id="open-agent" value={id} required onInput={(e) => setId(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={!id.trim()}>
          Chat with it
        </button>
      </form>
    </section>
  );
}

export function AgentList(props: { api: Api }) {
  const access = useAccess();
  const pager = usePager('agents');
  const { data, error, loading } = useLoad(
    (signal) => props.api.get<Page<Agent>>(`/v1/agents${q({ limit: 50, cursor: pager.cursor })}`, signal),
    [pager.cursor],
  );
  return (
    <section>
      <PageTitle>Agents</PageTitle>
      {access.writeAgents ? (
        <p>
          <Link to="/agents/new" class="button primary">
            New agent
          </Link>
        </p>
      ) : (
        <p class="muted" data-testid="read-only">
          Read-only: creating, editing and deleting agents needs the scope <code>agents:write</code>.
        </p>
      )}
      <ErrorBox error={error} />
      {loading && !data ? <p aria-live="polite">Loading…</p> : null}
      {data ? (
        <table>
          <caption class="sr-only">Agents of this tenant</caption>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Source</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((a) => (
              <tr key={a.id}>
                <td>
                  <Link to={`/agents/${encodeURIComponent(a.id)}`}>{a.id}</Link>
                </td>
                <td>{a.agent_def.name ?? a.id}</td>
                <td>{a.agent_def.role ?? ''}</td>
                <td>{a.source}</td>
                <td>
                  <When at={a.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {data ? <Pager pager={pager} nextCursor={data.next_cursor} /> : null}
    </section>
  );
}

type FormValues = Record<string, string>;

const TEXT_FIELDS: { key: keyof Constitution; label: string; hint: string; long?: boolean }[] = [
  { key: 'name', label: 'Name', hint: '1–128 characters; the id when empty' },
  { key: 'role', label: 'Role', hint: 'up to 256 characters' },
  { key: 'goal', label: 'Goal', hint: 'up to 4000 characters', long: true },
  { key: 'personality', label: 'Personality', hint: 'up to 2000 characters', long: true },
  { key: 'model', label: 'Model', hint: 'provider/model, e.g. openai/gpt-4o-mini; empty = the server default' },
  { key: 'max_tokens', label: 'Max tokens', hint: 'integer 1–200000 (default 4096)' },
  { key: 'temperature', label: 'Temperature', hint: 'number 0–2 (default 0.7)' },
];

function toValues(def: Constitution): FormValues {
  const v: FormValues = {};
  for (const [k, val] of Object.entries(def)) {
    if (val === null || val === undefined) continue;
    v[k] = Array.isArray(val) ? val.join('\n') : String(val);
  }
  return v;
}

/** The form's values as a constitution: numbers parsed where they look like numbers (the server checks the rest). */
function toBody(v: FormValues, original: Constitution | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const num = (s: string): number | string => (/^-?\d+(\.\d+)?$/.test(s.trim()) ? Number(s) : s);
  for (const f of ['name', 'role', 'goal', 'personality', 'model', 'brevity', 'mode'] as const) {
    const s = v[f] ?? '';
    if (s !== '') out[f] = s;
    else if (original && original[f] !== undefined && original[f] !== '' && original[f] !== null) out[f] = null;
  }
  for (const f of ['max_tokens', 'temperature'] as const) {
    const s = (v[f] ?? '').trim();
    if (s !== '') out[f] = num(s);
    else if (original && original[f] !== undefined) out[f] = null;
  }
  for (const f of ['rules', 'capabilities'] as const) {
    const list = (v[f] ?? '')
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
    if (list.length > 0 || (original && (original[f]?.length ?? 0) > 0)) out[f] = list;
  }
  return out;
}

/** `GET /v1/models`: the providers this server has; a placeholder (`openai/<model>`) takes any model name. */
interface Models {
  default_model: string;
  providers: { name: string; models: string[]; placeholder: boolean }[];
}

/** The model suggestions: the models the server names, and `provider/` for a provider that takes any model. */
function modelOptions(m: Models): { value: string; label: string }[] {
  return m.providers.flatMap((p) =>
    p.models.map((model) => {
      const open = model.indexOf('<');
      return open < 0
        ? { value: model, label: model === 'echo' ? 'echo (replies with your message; no provider)' : model }
        : { value: model.slice(0, open), label: `${model}: any model of ${p.name}` };
    }),
  );
}

/** Suggestions for the model field; typing any other `provider/model` still works (the server checks it). */
function ModelList(props: { models: Models | undefined }) {
  return (
    <datalist id="f-model-list">
      {props.models
        ? modelOptions(props.models).map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))
        : null}
    </datalist>
  );
}

function modelHint(m: Models | undefined): string {
  const base = 'provider/model, e.g. openai/gpt-4o-mini (pick or type one)';
  return m ? `${base}; empty = the server default, ${m.default_model}` : `${base}; empty = the server default`;
}

/** Server field names (`temperature`, `rules.3`, `agent_def.goal`) → the form field they belong to. */
function fieldOf(field: string): string {
  return field.replace(/^agent_def\./, '').split(/[.[]/)[0] ?? field;
}

export function AgentForm(props: { api: Api; agent?: Agent }) {
  const editing = props.agent !== undefined;
  const [values, setValues] = useState<FormValues>(() => (props.agent ? toValues(props.agent.agent_def) : {}));
  const [id, setId] = useState(props.agent?.id ?? '');
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [formError, setFormError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const models = useLoad((signal) => props.api.get<Models>('/v1/models', signal), []);
  const set = (k: string) => (e: TargetedEvent<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>) => {
    const value = e.currentTarget.value;
    setValues((v) => ({ ...v, [k]: value }));
  };

  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setErrors({});
    setFormError(null);
    setSaved(false);
    try {
      const body = toBody(values, props.agent?.agent_def);
      if (editing) {
        await props.api.call('PATCH', `/v1/agents/${encodeURIComponent(id)}`, body);
        setSaved(true);
      } else {
        const created = await props.api.call<Agent>('POST', '/v1/agents', { id, ...body });
        navigate(`/agents/${encodeURIComponent(created.id)}`);
      }
    } catch (err) {
      if (err instanceof ApiError && err.details.length > 0) {
        const byField: Record<string, string[]> = {};
        const known = new Set(['id', 'brevity', 'mode', 'rules', 'capabilities', ...TEXT_FIELDS.map((f) => f.key)]);
        const rest: string[] = [];
        for (const d of err.details) {
          const f = fieldOf(d.field);
          if (known.has(f)) byField[f] = [...(byField[f] ?? []), ...d.messages];
          else rest.push(`${d.field}: ${d.messages.join('; ')}`);
        }
        setErrors(byField);
        setFormError(rest.length > 0 ? new Error(rest.join('\n')) : err);
        // Focus the first field with a problem.
        const first = Object.keys(byField)[0];
        if (first) document.getElementById(`f-${first}`)?.focus();
      } else setFormError(err);
    } finally {
      setBusy(false);
    }
  };

  const fieldProps = (k: string) => ({
    id: `f-${k}`,
    name: k,
    'aria-invalid': errors[k] ? true : undefined,
    'aria-describedby': `f-${k}-hint${errors[k] ? ` f-${k}-err` : ''}`,
  });
  const hint = (k: string, text: string) => (
    <>
      <small id={`f-${k}-hint`} class="hint">
        {text}
      </small>
      {errors[k] ? (
        <ul id={`f-${k}-err`} class="field-error" data-field={k}>
          {errors[k].map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      ) : null}
    </>
  );

  return (
    <form onSubmit={(e) => void submit(e)} class="agent-form" noValidate>
      <div class="field">
        <label for="f-id">Id</label>
        <input
          {...fieldProps('id')}
          value={id}
          readOnly={editing}
          required
          onInput={(e) => setId(e.currentTarget.value)}
        />
        {hint('id', 'letters, digits, _ and -, up to 64; cannot change later')}
      </div>
      {TEXT_FIELDS.map((f) => (
        <div class="field" key={f.key}>
          <label for={`f-${f.key}`}>{f.label}</label>
          {f.long ? (
            <textarea {...fieldProps(f.key)} rows={3} value={values[f.key] ?? ''} onInput={set(f.key)} />
          ) : f.key === 'model' ? (
            <>
              <input {...fieldProps(f.key)} list="f-model-list" value={values[f.key] ?? ''} onInput={set(f.key)} />
              <ModelList models={models.data} />
            </>
          ) : (
            <input {...fieldProps(f.key)} value={values[f.key] ?? ''} onInput={set(f.key)} />
          )}
          {hint(f.key, f.key === 'model' ? modelHint(models.data) : f.hint)}
        </div>
      ))}
      <div class="field-row">
        <div class="field">
          <label for="f-brevity">Brevity</label>
          <select {...fieldProps('brevity')} value={values.brevity ?? ''} onChange={set('brevity')}>
            <option value="">default (lite)</option>
            {['off', 'lite', 'full', 'ultra'].map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
          {hint('brevity', 'how short the answers are')}
        </div>
        <div class="field">
          <label for="f-mode">Mode</label>
          <select {...fieldProps('mode')} value={values.mode ?? ''} onChange={set('mode')}>
            <option value="">default (standard)</option>
            {['standard', 'planner', 'writer'].map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
          {hint('mode', 'standard, planner or writer')}
        </div>
      </div>
      <div class="field">
        <label for="f-rules">Rules</label>
        <textarea {...fieldProps('rules')} rows={3} value={values.rules ?? ''} onInput={set('rules')} />
        {hint('rules', 'one per line, up to 64')}
      </div>
      <div class="field">
        <label for="f-capabilities">Capabilities</label>
        <textarea
          {...fieldProps('capabilities')}
          rows={3}
          value={values.capabilities ?? ''}
          onInput={set('capabilities')}
        />
        {hint(
          'capabilities',
          'one per line; /agent, /parallel, /write, /mem, /fetch, /a2a, /mcp, /search grant tools ' +
            '(/mcp:<server> grants one MCP server only); with no /… line every tool is allowed; other lines are skills',
        )}
      </div>
      <ErrorBox error={formError} />
      {saved ? (
        <p class="ok" role="status">
          Saved.
        </p>
      ) : null}
      <button type="submit" class="primary" disabled={busy}>
        {editing ? 'Save changes' : 'Create agent'}
      </button>
    </form>
  );
}

export function NewAgent(props: { api: Api }) {
  return (
    <section>
      <PageTitle>New agent</PageTitle>
      <AgentForm api={props.api} />
    </section>
  );
}

interface Card {
  name?: string;
  description?: string;
  supportedInterfaces?: { url: string; protocolBinding: string; protocolVersion: string }[];
  skills?: { id: string; name: string; description?: string }[];
}

export function AgentDetail(props: { api: Api; id: string }) {
  const { api, id } = props;
  const access = useAccess();
  const enc = encodeURIComponent(id);
  // A credential without agents:read sees the card (which a2a:invoke may read), not the constitution.
  const agent = useLoad(
    (signal) => (access.readAgents ? api.get<Agent>(`/v1/agents/${enc}`, signal) : Promise.resolve(null)),
    [id],
  );
  // Through `Api.call`: a 401 signs out like any other call, a 403 names the scope the card needs.
  const card = useLoad(
    (signal) =>
      api.call<Card>('GET', `/v1/a2a/agents/${enc}/.well-known/agent-card.json`, undefined, signal, {
        'A2A-Version': '1.0',
      }),
    [id],
  );
  const [deleteError, setDeleteError] = useState<unknown>(null);
  const remove = async (): Promise<void> => {
    if (!confirm(`Delete agent ${id}? Its tasks stay in the log.`)) return;
    try {
      await api.call('DELETE', `/v1/agents/${enc}`);
      navigate('/agents');
    } catch (err) {
      setDeleteError(err);
    }
  };
  const a = agent.data;
  const editable = a?.source === 'stored' && access.writeAgents;
  return (
    <section>
      <PageTitle>Agent {id}</PageTitle>
      <ErrorBox error={agent.error} />
      {a !== undefined ? (
        <>
          <p class="actions">
            {access.invoke ? (
              <Link to={`/agents/${enc}/chat`} class="button primary">
                Try it
              </Link>
            ) : null}
            {access.readTasks ? (
              <Link to={`/tasks?agent_id=${enc}`} class="button">
                Its tasks
              </Link>
            ) : null}
            {editable ? (
              <button type="button" class="danger" onClick={() => void remove()}>
                Delete agent
              </button>
            ) : null}
          </p>
          <ErrorBox error={deleteError} />
          <div class="columns">
            <div>
              <h2>Constitution</h2>
              {a === null ? (
                <NotAllowed what="Reading an agent's constitution" scopes={NEEDS.readAgents} />
              ) : editable ? (
                <AgentForm api={api} agent={a} key={a.id} />
              ) : (
                <>
                  <p class="muted" data-testid="read-only">
                    {a.source === 'builtin'
                      ? 'The built-in master agent: read-only here.'
                      : a.source === 'file'
                        ? 'A file-backed agent: read-only here.'
                        : 'Read-only: editing needs the scope agents:write.'}
                  </p>
                  <pre tabIndex={0}>{JSON.stringify(a.agent_def, null, 2)}</pre>
                </>
              )}
            </div>
            <div>
              <h2>Endpoints</h2>
              <ErrorBox error={card.error} />
              {card.data?.supportedInterfaces ? (
                <table>
                  <caption class="sr-only">Endpoints per binding</caption>
                  <thead>
                    <tr>
                      <th scope="col">Binding</th>
                      <th scope="col">Version</th>
                      <th scope="col">URL</th>
                    </tr>
                  </thead>
                  <tbody>
                    {card.data.supportedInterfaces.map((i) => (
                      <tr key={`${i.protocolBinding}-${i.protocolVersion}`}>
                        <td>{i.protocolBinding}</td>
                        <td>{i.protocolVersion}</td>
                        <td>
                          <code>{i.url}</code>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : null}
              <Copyable
                label="Agent card URL"
                text={`${location.origin}/v1/a2a/agents/${enc}/.well-known/agent-card.json`}
              />
              {agentSnippets(location.origin, enc).map((s) => (
                <Copyable key={s.label} label={s.label} text={s.text} />
              ))}
              <h2>Agent card</h2>
              <p class="muted">As A2A clients see it (A2A-Version 1.0).</p>
              {card.data ? (
                <pre tabIndex={0} class="card-json">
                  {JSON.stringify(card.data, null, 2)}
                </pre>
              ) : null}
            </div>
          </div>
        </>
      ) : null}
    </section>
  );
}
