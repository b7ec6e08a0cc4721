import { useEffect, useMemo, useState } from 'preact/hooks';
import { Api, detectKind, loadSession, saveSession, setUnauthorizedHandler, type Session } from './api';
import { Audit, Registries, Tenants } from './admin';
import { AgentDetail, AgentList, NewAgent } from './agents';
import { Chat } from './chat';
import { match, navigate, useRoute } from './router';
import { TaskList, TaskPage } from './tasks';
import { ErrorBox, Link, PageTitle } from './ui';

function SignIn(props: { onSignedIn: (s: Session) => void; notice: string | null }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const t = token.trim();
      const kind = await detectKind(t);
      props.onSignedIn({ token: t, kind });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <PageTitle>Arbiter console</PageTitle>
      {props.notice ? (
        <p class="error" role="alert">
          {props.notice}
        </p>
      ) : null}
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">Token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={token}
          aria-describedby="token-hint"
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <small id="token-hint" class="hint">
          A tenant token (<code>atr_…</code>) or the admin token (<code>adm_…</code>, printed at the first start and
          saved in <code>~/.arbiter/admin_token</code>). It is kept in this tab only (sessionStorage) and sent as the
          bearer on the console's API calls.
        </small>
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy || !token.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const TENANT_NAV = [
  { to: '/agents', label: 'Agents' },
  { to: '/tasks', label: 'Tasks' },
];
const ADMIN_NAV = [
  { to: '/tenants', label: 'Tenants' },
  { to: '/audit', label: 'Audit log' },
  { to: '/registries', label: 'Registries' },
];

function NotFound() {
  return (
    <section>
      <PageTitle>Not found</PageTitle>
      <p>
        No such page. <Link to="/">Start over</Link>.
      </p>
    </section>
  );
}

function Routes(props: { api: Api; session: Session }) {
  const { path, search } = useRoute();
  const { api, session } = props;
  if (path === '/') {
    navigate(session.kind === 'admin' ? '/tenants' : '/agents', true);
    return null;
  }
  if (session.kind === 'admin') {
    if (path === '/tenants') return <Tenants api={api} />;
    if (path === '/audit') return <Audit api={api} />;
    if (path === '/registries') return <Registries api={api} />;
    return <NotFound />;
  }
  if (path === '/agents') return <AgentList api={api} />;
  if (path === '/agents/new') return <NewAgent api={api} />;
  if (path === '/tasks') return <TaskList api={api} search={search} />;
  let m = match('/agents/:id/chat', path);
  if (m?.id) return <Chat api={api} id={m.id} key={m.id} />;
  m = match('/agents/:id', path);
  if (m?.id) return <AgentDetail api={api} id={m.id} key={m.id} />;
  m = match('/tasks/:id', path);
  if (m?.id) return <TaskPage api={api} id={m.id} key={m.id} />;
  return <NotFound />;
}

export function App() {
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [notice, setNotice] = useState<string | null>(null);
  const { path } = useRoute();
  const api = useMemo(() => (session ? new Api(session.token) : null), [session]);
  const signOut = (message: string | null): void => {
    saveSession(null);
    setSession(null);
    setNotice(message);
  };
  useEffect(() => {
    setUnauthorizedHandler((message) => signOut(`Signed out: ${message}.`));
  }, []);
  if (!session || !api) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          saveSession(s);
          setNotice(null);
          setSession(s);
          navigate('/', true);
        }}
      />
    );
  }
  const nav = session.kind === 'admin' ? ADMIN_NAV : TENANT_NAV;
  return (
    <>
      <a href="#main" class="skip">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Arbiter</span>
        <nav aria-label="Main">
          <ul>
            {nav.map((n) => (
              <li key={n.to}>
                <Link to={n.to} current={path === n.to || path.startsWith(`${n.to}/`)}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          {session.kind === 'admin' ? 'admin' : 'tenant'} <code>{session.token.slice(0, 8)}…</code>
        </span>
        <button type="button" onClick={() => signOut(null)}>
          Sign out
        </button>
      </header>
      <main id="main">
        <Routes api={api} session={session} />
      </main>
    </>
  );
}
