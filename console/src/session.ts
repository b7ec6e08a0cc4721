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

/** How long a new tab waits at most for an answer from an open tab before it shows the sign-in page. */
const ASK_WAIT_MS = 400;

/**
 * A shared Web Lock every signed-in tab holds while it has its session: a new tab asks only when some tab holds it,
 * so with no signed-in tab open the sign-in page shows at once. Locks, like the channel, are per origin and
 * browser profile and store nothing. Where the browser has no Web Locks (a page served over plain http from
 * another host is not a secure context), a new tab asks and waits as before.
 */
const PRESENCE_LOCK = 'arbiter.console.signed-in';

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
  private readonly locks: LockManager | null = typeof navigator === 'object' ? (navigator.locks ?? null) : null;
  /** Whether this tab should hold the presence lock, and how to let it go once held. */
  private present = false;
  private release: (() => void) | null = null;
  /** Ends the current `ask` early: an open tab answered. */
  private answered: (() => void) | null = null;

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
      if (s) {
        this.onSession(s);
        this.answered?.();
      }
    } else if (m.type === 'signed-out') {
      this.onSignedOut(typeof m.token === 'string' ? m.token : null, typeof m.reason === 'string' ? m.reason : null);
    }
  }

  private post(m: TabMessage): void {
    this.channel?.postMessage(m);
  }

  /**
   * Asks the open tabs for their session; resolves once one answers (it arrives through `onSession`), at once when
   * no tab is signed in, or after `ASK_WAIT_MS`.
   */
  async ask(): Promise<void> {
    if (!this.channel) return;
    if (this.locks && !(await this.someTabSignedIn(this.locks))) return;
    this.post({ type: 'ask' });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ASK_WAIT_MS);
      this.answered = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.answered = null;
  }

  private async someTabSignedIn(locks: LockManager): Promise<boolean> {
    try {
      const { held = [] } = await locks.query();
      return held.some((l) => l.name === PRESENCE_LOCK);
    } catch {
      return true; // cannot tell: ask
    }
  }

  /** Holds the presence lock while this tab has a session, and lets it go when it has none. */
  signedInHere(present: boolean): void {
    if (present === this.present || !this.locks) return;
    this.present = present;
    if (!present) {
      this.release?.();
      this.release = null;
      return;
    }
    void this.locks
      .request(PRESENCE_LOCK, { mode: 'shared' }, () =>
        // Granted after a sign-out already came, or a second time: let it go at once.
        this.present && !this.release ? new Promise<void>((resolve) => (this.release = resolve)) : undefined,
      )
      .catch(() => undefined);
  }

  signedIn(s: Session): void {
    this.post({ type: 'session', session: s });
  }

  signedOut(token: string | null, reason: string | null): void {
    this.post({ type: 'signed-out', token, reason });
  }

  close(): void {
    this.signedInHere(false);
    this.channel?.close();
  }
}
