import type { Me } from './api';

/**
 * The bearer this tab signed in with and who it is (`GET /v1/me`): in memory and in `sessionStorage` (gone with
 * the tab), never in `localStorage` or a cookie. Other tabs of this origin get it from a tab that holds it, over a
 * `BroadcastChannel` (see `SessionChannel`).
 */
export interface Session {
  token: string;
  me: Me;
}

const SESSION_KEY = 'arbiter.console.session';

/** A `GET /v1/me` answer as this console reads it (a session saved by an older console is not: sign in again). */
const isMe = (m: unknown): m is Me => {
  if (typeof m !== 'object' || m === null) return false;
  const o = m as {
    kind?: unknown;
    role?: unknown;
    actor?: unknown;
    scopes?: unknown;
    tenant?: { name?: unknown };
    credential?: { kind?: unknown };
  };
  if (typeof o.actor !== 'string' || typeof o.credential?.kind !== 'string') return false;
  if (o.kind === 'admin') return o.role === 'admin' || o.role === 'auditor';
  return (
    o.kind === 'tenant' &&
    typeof o.tenant?.name === 'string' &&
    Array.isArray(o.scopes) &&
    o.scopes.every((s) => typeof s === 'string')
  );
};

/** A session read from storage or a message: only the shape the console wrote. */
export function asSession(v: unknown): Session | null {
  if (typeof v !== 'object' || v === null) return null;
  const s = v as Partial<Session>;
  return typeof s.token === 'string' && s.token.length > 0 && isMe(s.me) ? { token: s.token, me: s.me } : null;
}

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    return raw ? asSession(JSON.parse(raw)) : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session | null): void {
  try {
    if (s) sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    /* storage disabled: the session lives in memory only */
  }
}

/** What tabs say to each other. */
type TabMessage =
  | { type: 'ask' }
  | { type: 'session'; session: Session }
  | { type: 'signed-out'; token: string | null; reason: string | null };

/** How long a new tab waits for an answer from an open tab before it shows the sign-in page. */
const ASK_WAIT_MS = 400;

/**
 * Shares the session between the console's tabs of this origin without storing it anywhere shared: a new tab
 * asks on a `BroadcastChannel` and a signed-in tab answers with its session; a sign-in is announced (tabs on the
 * sign-in page take it); a sign-out is announced and every tab signs out. The channel reaches only documents of
 * the same origin in the same browser profile; nothing is sent to the server or written to disk. Where the
 * browser has no `BroadcastChannel`, each tab signs in on its own.
 */
export class SessionChannel {
  private readonly channel: BroadcastChannel | null =
    typeof BroadcastChannel === 'function' ? new BroadcastChannel('arbiter.console.session') : null;

  constructor(
    /** This tab's session now (answers `ask`). */
    private readonly current: () => Session | null,
    /** Another tab signed in or answered our question. */
    private readonly onSession: (s: Session) => void,
    /** Another tab signed out (`token`: only tabs holding that token, after a 401; null: every tab). */
    private readonly onSignedOut: (token: string | null, reason: string | null) => void,
  ) {
    this.channel?.addEventListener('message', (e: MessageEvent<unknown>) => this.receive(e.data));
  }

  private receive(data: unknown): void {
    if (typeof data !== 'object' || data === null) return;
    const m = data as Partial<TabMessage> & { session?: unknown; token?: unknown; reason?: unknown };
    if (m.type === 'ask') {
      const s = this.current();
      if (s) this.post({ type: 'session', session: s });
    } else if (m.type === 'session') {
      const s = asSession(m.session);
      if (s) this.onSession(s);
    } else if (m.type === 'signed-out') {
      this.onSignedOut(typeof m.token === 'string' ? m.token : null, typeof m.reason === 'string' ? m.reason : null);
    }
  }

  private post(m: TabMessage): void {
    this.channel?.postMessage(m);
  }

  /** Asks the open tabs for their session; resolves once one answers (it arrives through `onSession`) or not. */
  ask(): Promise<void> {
    if (!this.channel) return Promise.resolve();
    this.post({ type: 'ask' });
    return new Promise((resolve) => setTimeout(resolve, ASK_WAIT_MS));
  }

  signedIn(s: Session): void {
    this.post({ type: 'session', session: s });
  }

  signedOut(token: string | null, reason: string | null): void {
    this.post({ type: 'signed-out', token, reason });
  }

  close(): void {
    this.channel?.close();
  }
}
