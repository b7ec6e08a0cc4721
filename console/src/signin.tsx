import { useState } from 'preact/hooks';
import { cleanToken, SCOPES, whoAmI, type Me } from './api';
import type { Session } from './session';
import { ErrorBox, PageTitle, When } from './ui';

/** A JWT that expired while signed in: who it was and when, for the sign-in page to say so. */
export interface Expired {
  actor: string;
  at: string;
}

/** Whether a 401 on this session means its JWT expired (the server says so, or its `exp` has passed). */
export function expiredOf(me: Me, message: string | null): Expired | null {
  const c = me.credential;
  if (c.kind !== 'jwt') return null;
  const past = Date.parse(c.expires_at) <= Date.now();
  return past || (message !== null && /expired/i.test(message)) ? { actor: me.actor, at: c.expires_at } : null;
}

export function SignIn(props: { onSignedIn: (s: Session) => void; notice: string | null; expired: Expired | null }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const t = cleanToken(token);
      props.onSignedIn({ token: t, me: await whoAmI(t) });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const { expired } = props;
  return (
    <main class="signin" id="main">
      <PageTitle>Arbiter console</PageTitle>
      {expired ? (
        <div class="expired" role="alert" data-testid="signin-expired">
          <h2>Your sign-in expired</h2>
          <p>
            The token you signed in with (<code>{expired.actor}</code>) expired at <When at={expired.at} />. Paste a
            fresh token to continue where you were.
          </p>
        </div>
      ) : props.notice ? (
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
          A tenant token (<code>atr_…</code>), an operator token (<code>adm_…</code>; the admin token is printed at the
          first start and saved in <code>~/.arbiter/admin_token</code>), or a JWT access token from an identity provider
          this server trusts. It is sent as the bearer on the console's API calls and kept in memory and{' '}
          <code>sessionStorage</code>, never in <code>localStorage</code> or a cookie. Other tabs of this console in
          this browser get it from an open tab (a <code>BroadcastChannel</code>, nothing leaves the browser); signing
          out signs out every tab.
        </small>
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy || !cleanToken(token)}>
          Sign in
        </button>
      </form>
    </main>
  );
}

/** The header's "who is signed in": the tenant or operator role, the actor, what it may not do, a JWT's expiry. */
export function Who(props: { session: Session }) {
  const { me } = props.session;
  const limits =
    me.kind === 'admin'
      ? me.role === 'auditor'
        ? 'read-only'
        : null
      : me.scopes.length < SCOPES.length
        ? me.scopes.length
          ? me.scopes.join(' ')
          : 'no scopes'
        : null;
  return (
    <div class="who" data-testid="who">
      <span class="who-name">
        {me.kind === 'admin' ? (
          me.role
        ) : (
          <>
            tenant <strong>{me.tenant.name}</strong>
          </>
        )}
      </span>
      <span class="who-actor" data-testid="actor" title="Signed in as (the actor audit entries name)">
        {me.actor}
      </span>
      {limits ? (
        <span
          class="who-limits"
          data-testid="scopes"
          title={me.kind === 'admin' ? 'An auditor may only read' : 'What this credential may do (its scopes)'}
        >
          {limits}
        </span>
      ) : null}
      {me.credential.kind === 'jwt' ? (
        <span data-testid="expires">
          expires <When at={me.credential.expires_at} />
        </span>
      ) : null}
    </div>
  );
}
