import type { TargetedEvent } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, type Agent, type Api, type Constitution } from './api';
import { navigate } from './router';
import { ErrorBox, useLoad } from './ui';

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

const TIMEOUTS = ['first_event_ms', 'idle_ms', 'total_ms'] as const;

function toValues(def: Constitution): FormValues {
  const v: FormValues = {};
  for (const [k, val] of Object.entries(def)) {
    if (val === null || val === undefined || k === 'backend') continue;
    v[k] = Array.isArray(val) ? val.join('\n') : String(val);
  }
  if (def.backend) {
    v.backed = 'remote';
    v.remote = def.backend.remote;
    v.registry = def.backend.registry ?? '';
    for (const t of TIMEOUTS) if (def.backend.timeouts?.[t] !== undefined) v[t] = String(def.backend.timeouts[t]);
  }
  return v;
}

/** The backend of a remote-backed agent (gateway mode), or null for a model's. */
function backendOf(v: FormValues): Record<string, unknown> | null {
  if (v.backed !== 'remote') return null;
  const timeouts: Record<string, number | string> = {};
  for (const t of TIMEOUTS) {
    const s = (v[t] ?? '').trim();
    if (s !== '') timeouts[t] = /^\d+$/.test(s) ? Number(s) : s;
  }
  return {
    remote: (v.remote ?? '').trim(),
    ...(v.registry ? { registry: v.registry } : {}),
    ...(Object.keys(timeouts).length ? { timeouts } : {}),
  };
}

/** The form's values as a constitution: numbers parsed where they look like numbers (the server checks the rest). */
function toBody(v: FormValues, original: Constitution | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const num = (s: string): number | string => (/^-?\d+(\.\d+)?$/.test(s.trim()) ? Number(s) : s);
  const backend = backendOf(v);
  if (backend) out.backend = backend;
  else if (original?.backend) out.backend = null;
  for (const f of ['name', 'role', 'goal', 'personality', 'model', 'brevity', 'mode'] as const) {
    const s = f === 'model' && backend ? '' : (v[f] ?? '');
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
  const f = field.replace(/^agent_def\./, '');
  // A backend's fields are shown on their own inputs: `backend.remote`, `backend.timeouts.idle_ms` …
  if (f.startsWith('backend.')) return f.split('.').at(-1) ?? f;
  return f.split(/[.[]/)[0] ?? field;
}

/** The form that creates a stored agent or edits its constitution; a 400's `details` shown on their fields. */
export function AgentForm(props: { api: Api; agent?: Agent }) {
  const editing = props.agent !== undefined;
  const [values, setValues] = useState<FormValues>(() => (props.agent ? toValues(props.agent.agent_def) : {}));
  const [id, setId] = useState(props.agent?.id ?? '');
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [formError, setFormError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const models = useLoad((signal) => props.api.get<Models>('/v1/models', signal), []);
  const remotes = useLoad((signal) => props.api.get<{ items: { name: string }[] }>('/v1/remote-agents', signal), []);
  const remote = values.backed === 'remote';
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
        const known = new Set([
          'id',
          'brevity',
          'mode',
          'rules',
          'capabilities',
          'remote',
          'registry',
          ...TIMEOUTS,
          ...TEXT_FIELDS.map((f) => f.key),
        ]);
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
      <div class="field">
        <label for="f-backed">Backed by</label>
        <select {...fieldProps('backed')} value={values.backed ?? ''} onChange={set('backed')}>
          <option value="">a model</option>
          <option value="remote">a remote agent (gateway)</option>
        </select>
        {hint('backed', 'a model answers, or a remote A2A agent of your registry or the shared one does')}
      </div>
      {remote ? (
        <>
          <div class="field-row">
            <div class="field">
              <label for="f-remote">Remote agent</label>
              <input
                {...fieldProps('remote')}
                list="f-remote-list"
                value={values.remote ?? ''}
                onInput={set('remote')}
              />
              <datalist id="f-remote-list">
                {(remotes.data?.items ?? []).map((r) => (
                  <option key={r.name} value={r.name} />
                ))}
              </datalist>
              {hint('remote', 'the registry entry’s name: one of your remote agents, or a shared one')}
            </div>
            <div class="field">
              <label for="f-registry">Registry</label>
              <select {...fieldProps('registry')} value={values.registry ?? ''} onChange={set('registry')}>
                <option value="">yours, then shared</option>
                <option value="tenant">yours only</option>
                <option value="shared">shared only</option>
              </select>
              {hint('registry', 'where the name is looked up')}
            </div>
          </div>
          <div class="field-row">
            {TIMEOUTS.map((t) => (
              <div class="field" key={t}>
                <label for={`f-${t}`}>{t.replace(/_ms$/, '').replace('_', ' ')} timeout (ms)</label>
                <input {...fieldProps(t)} inputMode="numeric" value={values[t] ?? ''} onInput={set(t)} />
                {hint(
                  t,
                  t === 'first_event_ms' ? 'default 30000' : t === 'idle_ms' ? 'default 120000' : 'default 900000',
                )}
              </div>
            ))}
          </div>
        </>
      ) : null}
      {TEXT_FIELDS.filter((f) => !(remote && ['model', 'max_tokens', 'temperature'].includes(f.key))).map((f) => (
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
