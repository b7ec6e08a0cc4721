import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, setUnauthorizedHandler, whoAmI } from './api';
import { Registries, Tenants } from './admin';
import { Audit } from './audit';
import { AgentDetail, AgentList, NewAgent } from './agents';
import { Chat } from './chat';
import { currentPath, match, navigate, useRoute } from './router';
import { loadSession, saveSession, SessionChannel, type Session } from './session';
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
      props.onSignedIn({ token: t, me: await whoAmI(t) });
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
          saved in <code>~/.arbiter/admin_token</code>). It is sent as the bearer on the console's API calls and kept in
          memory and <code>sessionStorage</code>, never in <code>localStorage</code> or a cookie. Other tabs of this
          console in this browser get it from an open tab (a <code>BroadcastChannel</code>, nothing leaves the browser);
          signing out signs out every tab.
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

const ADMIN_PATHS = new Set(ADMIN_NAV.map((n) => n.to));

/** Where a session of this kind starts. */
const home = (s: Session): string => (s.me.kind === 'admin' ? '/tenants' : '/agents');

/** Whether `path` is a page of this kind of session (a deep link opened while signed out is kept if so). */
const isPageOf = (s: Session, path: string): boolean =>
  path !== '/' && (s.me.kind === 'admin') === ADMIN_PATHS.has(path);

function Routes(props: { api: Api; session: Session }) {
  const { path, search } = useRoute();
  const { api, session } = props;
  if (path === '/') {
    navigate(home(session), true);
    return null;
  }
  if (session.me.kind === 'admin') {
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

function Who(props: { session: Session }) {
  const { me } = props.session;
  if (me.kind === 'admin') return <span class="who">admin</span>;
  return (
    <span class="who" title={`token ${me.token.prefix}…`}>
      tenant <strong>{me.tenant.name}</strong>
    </span>
  );
}

export function App() {
  const stored = useMemo(() => loadSession(), []);
  const [session, setSession] = useState<Session | null>(stored);
  // A tab without a session first asks the open tabs for theirs (briefly), then shows the sign-in page.
  const [asking, setAsking] = useState(stored === null);
  const [notice, setNotice] = useState<string | null>(null);
  const { path } = useRoute();
  const api = useMemo(() => (session ? new Api(session.token) : null), [session]);
  const current = useRef(session);
  current.current = session;

  /** Takes a session (signed in here or in another tab); the page asked for is kept when it is one of its own. */
  const start = (s: Session): void => {
    saveSession(s);
    current.current = s;
    setNotice(null);
    setSession(s);
    setAsking(false);
    if (!isPageOf(s, currentPath())) navigate(home(s), true);
  };
  const end = (message: string | null): void => {
    saveSession(null);
    current.current = null;
    setSession(null);
    setNotice(message);
  };
  const channel = useMemo(
    () =>
      new SessionChannel(
        () => current.current,
        (s) => {
          if (!current.current) start(s);
        },
        (token, reason) => {
          const mine = current.current;
          if (mine && (token === null || token === mine.token)) end(reason ?? 'Signed out in another tab.');
        },
      ),
    [],
  );
  useEffect(() => {
    if (asking) void channel.ask().then(() => setAsking(false));
    return () => channel.close();
  }, []);
  useEffect(() => {
    setUnauthorizedHandler((message) => {
      const token = current.current?.token ?? null;
      const text = `Signed out: ${message}.`;
      end(text);
      // The other tabs holding this token are signed out too (a revoked token fails there as well).
      if (token) channel.signedOut(token, text);
    });
  }, []);
  if (!session || !api) {
    if (asking) return <main id="main" class="signin" aria-busy="true" />;
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          start(s);
          channel.signedIn(s);
        }}
      />
    );
  }
  const nav = session.me.kind === 'admin' ? ADMIN_NAV : TENANT_NAV;
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
        <Who session={session} />
        <button
          type="button"
          onClick={() => {
            end(null);
            channel.signedOut(null, null);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <Routes api={api} session={session} />
      </main>
    </>
  );
}
