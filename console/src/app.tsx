import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { AccessContext, accessOf, NEEDS, type Access } from './access';
import { Api, setUnauthorizedHandler } from './api';
import { Registries, Tenants } from './admin';
import { Audit } from './audit';
import { AgentDetail, AgentList, NewAgent, OpenAgent } from './agents';
import { Chat } from './chat';
import { KINDS, NewRegistryEntry, RegistryEntryPage, RegistryList, type RegistryKind } from './own-registries';
import { currentPath, match, navigate, useRoute } from './router';
import { loadSession, saveSession, SessionChannel, type Session } from './session';
import { expiredOf, SignIn, Who, type Expired } from './signin';
import { TaskList, TaskPage } from './tasks';
import { BudgetsPage, useBudgetsAvailable } from './budgets';
import { Overview } from './overview';
import { UsagePage } from './usage';
import { Link, NotAllowed, PageTitle } from './ui';

/** A tenant's pages, each shown when the credential may use it (an invoke-only token opens agents by id). */
const TENANT_NAV: { to: string; label: string; may: (a: Access) => boolean }[] = [
  { to: '/overview', label: 'Overview', may: (a) => a.readStats },
  { to: '/agents', label: 'Agents', may: (a) => a.readAgents || a.invoke },
  { to: '/tasks', label: 'Tasks', may: (a) => a.readTasks },
  { to: '/remote-agents', label: 'Remote agents', may: (a) => a.readAgents },
  { to: '/mcp-servers', label: 'MCP servers', may: (a) => a.readAgents },
  { to: '/usage', label: 'Usage', may: (a) => a.readUsage },
  { to: '/budgets', label: 'Budgets', may: (a) => a.readUsage },
];
const ADMIN_NAV = [
  { to: '/overview', label: 'Overview' },
  { to: '/tenants', label: 'Tenants' },
  { to: '/usage', label: 'Usage' },
  { to: '/budgets', label: 'Budgets' },
  { to: '/audit', label: 'Audit log' },
  { to: '/registries', label: 'Registries' },
];
/** Pages both kinds of session have (each its own view of them). */
const SHARED_PATHS = new Set(['/overview', '/usage', '/budgets']);

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

const ADMIN_PATHS = new Set(ADMIN_NAV.map((n) => n.to).filter((p) => !SHARED_PATHS.has(p)));

/** Where a session of this kind starts: its first page it may use. */
const home = (s: Session): string => {
  if (s.me.kind === 'admin') return '/overview';
  const access = accessOf(s.me);
  return TENANT_NAV.find((n) => n.may(access))?.to ?? '/agents';
};

/** Whether `path` is a page of this kind of session (a deep link opened while signed out is kept if so). */
const isPageOf = (s: Session, path: string): boolean =>
  path !== '/' && (SHARED_PATHS.has(path) || (s.me.kind === 'admin') === ADMIN_PATHS.has(path));

function Routes(props: { api: Api; session: Session; access: Access; budgets: boolean | undefined }) {
  const { path, search } = useRoute();
  const { api, session, access } = props;
  if (path === '/') {
    navigate(home(session), true);
    return null;
  }
  const admin = session.me.kind === 'admin';
  if (path === '/overview') {
    return access.readStats ? (
      <Overview api={api} admin={admin} key={session.token} />
    ) : (
      <section>
        <PageTitle>Not allowed</PageTitle>
        <NotAllowed what="The overview" scopes={NEEDS.readStats} />
      </section>
    );
  }
  if (path === '/usage') {
    return access.readUsage ? (
      <UsagePage api={api} admin={admin} />
    ) : (
      <section>
        <PageTitle>Not allowed</PageTitle>
        <NotAllowed what="Reading usage" scopes={NEEDS.readUsage} />
      </section>
    );
  }
  if (path === '/budgets') {
    if (props.budgets === false) {
      return (
        <section>
          <PageTitle>Budgets</PageTitle>
          <p class="notice">This server has no budgets.</p>
        </section>
      );
    }
    if (props.budgets === undefined) return <section aria-busy="true" />;
    return access.readUsage ? (
      <BudgetsPage api={api} admin={admin} mayEdit={admin ? access.adminWrite : access.writeAgents} />
    ) : (
      <section>
        <PageTitle>Not allowed</PageTitle>
        <NotAllowed what="Reading budgets" scopes={NEEDS.readUsage} />
      </section>
    );
  }
  if (session.me.kind === 'admin') {
    if (path === '/tenants') return <Tenants api={api} />;
    if (path === '/audit') return <Audit api={api} />;
    if (path === '/registries') return <Registries api={api} />;
    return <NotFound />;
  }
  const denied = (what: string, scopes: readonly string[]) => (
    <section>
      <PageTitle>Not allowed</PageTitle>
      <NotAllowed what={what} scopes={scopes} />
    </section>
  );
  if (path === '/agents') {
    if (access.readAgents) return <AgentList api={api} />;
    return access.invoke ? <OpenAgent /> : denied('Listing agents', NEEDS.readAgents);
  }
  if (path === '/agents/new') {
    return access.writeAgents ? <NewAgent api={api} /> : denied('Creating an agent', NEEDS.writeAgents);
  }
  if (path === '/tasks') {
    return access.readTasks ? <TaskList api={api} search={search} /> : denied('Reading tasks', NEEDS.readTasks);
  }
  for (const kind of Object.keys(KINDS) as RegistryKind[]) {
    const base = KINDS[kind].path;
    if (path === base) {
      return access.readAgents ? (
        <RegistryList api={api} kind={kind} key={kind} />
      ) : (
        denied(`Listing ${KINDS[kind].title.toLowerCase()}`, NEEDS.readAgents)
      );
    }
    if (path === `${base}/new`) {
      return access.writeAgents ? (
        <NewRegistryEntry api={api} kind={kind} key={kind} />
      ) : (
        denied(`Adding a ${KINDS[kind].one}`, NEEDS.writeAgents)
      );
    }
    const one = match(`${base}/:name`, path);
    if (one?.name) {
      return access.readAgents ? (
        <RegistryEntryPage api={api} kind={kind} name={one.name} key={`${kind}/${one.name}`} />
      ) : (
        denied(`Reading a ${KINDS[kind].one}`, NEEDS.readAgents)
      );
    }
  }
  let m = match('/agents/:id/chat', path);
  if (m?.id) return access.invoke ? <Chat api={api} id={m.id} key={m.id} /> : denied('Chatting', NEEDS.invoke);
  m = match('/agents/:id', path);
  if (m?.id) {
    return access.readAgents || access.invoke ? (
      <AgentDetail api={api} id={m.id} key={m.id} />
    ) : (
      denied('Reading an agent', NEEDS.readAgents)
    );
  }
  m = match('/tasks/:id', path);
  if (m?.id) {
    return access.readTasks ? <TaskPage api={api} id={m.id} key={m.id} /> : denied('Reading a task', NEEDS.readTasks);
  }
  return <NotFound />;
}

export function App() {
  const stored = useMemo(() => loadSession(), []);
  const [session, setSession] = useState<Session | null>(stored);
  // A tab without a session first asks the open tabs for theirs (briefly), then shows the sign-in page.
  const [asking, setAsking] = useState(stored === null);
  const [notice, setNotice] = useState<string | null>(null);
  const [expired, setExpired] = useState<Expired | null>(null);
  const { path } = useRoute();
  const api = useMemo(() => (session ? new Api(session.token) : null), [session]);
  const budgets = useBudgetsAvailable(api, session?.me.kind === 'admin');
  const current = useRef(session);
  current.current = session;

  /** Takes a session (signed in here or in another tab); the page asked for is kept when it is one of its own. */
  const start = (s: Session): void => {
    saveSession(s);
    current.current = s;
    setNotice(null);
    setExpired(null);
    setSession(s);
    setAsking(false);
    if (!isPageOf(s, currentPath())) navigate(home(s), true);
  };
  const end = (message: string | null, lapsed: Expired | null = null): void => {
    saveSession(null);
    current.current = null;
    setSession(null);
    setNotice(message);
    setExpired(lapsed);
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
          if (mine && (token === null || token === mine.token)) {
            end(reason ?? 'Signed out in another tab.', token ? expiredOf(mine.me, reason) : null);
          }
        },
      ),
    [],
  );
  useEffect(() => {
    if (asking) void channel.ask().then(() => setAsking(false));
    return () => channel.close();
  }, []);
  useEffect(() => channel.signedInHere(session !== null), [session]);
  useEffect(() => {
    setUnauthorizedHandler((message) => {
      const mine = current.current;
      // Several calls in flight may each be refused: the first one signs out, the others have nothing to add.
      if (!mine) return;
      const token = mine.token;
      const text = `Signed out: ${message}.`;
      // A JWT that expired is the usual end of a JWT session: say so plainly, not as an error.
      end(text, expiredOf(mine.me, message));
      // The other tabs holding this token are signed out too (a revoked token fails there as well).
      channel.signedOut(token, text);
    });
  }, []);
  if (!session || !api) {
    if (asking) return <main id="main" class="signin" aria-busy="true" />;
    return (
      <SignIn
        notice={notice}
        expired={expired}
        onSignedIn={(s) => {
          start(s);
          channel.signedIn(s);
        }}
      />
    );
  }
  const access = accessOf(session.me);
  const nav = (session.me.kind === 'admin' ? ADMIN_NAV : TENANT_NAV.filter((n) => n.may(access))).filter(
    (n) => n.to !== '/budgets' || budgets === true,
  );
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
        <AccessContext.Provider value={access}>
          <Routes api={api} session={session} access={access} budgets={budgets} />
        </AccessContext.Provider>
      </main>
    </>
  );
}
