import { useState } from 'preact/hooks';
import { agentSnippets } from '../../src/console/agent-snippets';
import { NEEDS, useAccess } from './access';
import { AgentForm } from './agent-form';
import { q, type Agent, type Api, type Page } from './api';
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
