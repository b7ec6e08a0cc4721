import { useState } from 'preact/hooks';
import { useAccess } from './access';
import { SCOPES, type Api, type Scope, type Tenant, type TokenInfo } from './api';
import { Copyable, ErrorBox, useLoad, When } from './ui';

/** A token just issued: shown once, here, and nowhere else. */
export function ShownOnce(props: { token: string; label: string; onDone: () => void }) {
  return (
    <div class="once" role="status">
      <p>
        <strong>{props.label}</strong> Copy it now: it is shown only this once.
      </p>
      <Copyable label="Token" text={props.token} secret />
      <button type="button" onClick={props.onDone}>
        I have copied it
      </button>
    </div>
  );
}

/** The scopes a new token gets (every one by default): checkboxes. */
function ScopePicker(props: { value: Scope[]; onChange: (v: Scope[]) => void }) {
  return (
    <fieldset class="scopes">
      <legend>Scopes of a new token</legend>
      {SCOPES.map((s) => (
        <label key={s} class="check">
          <input
            type="checkbox"
            checked={props.value.includes(s)}
            onChange={(e) =>
              props.onChange(
                e.currentTarget.checked
                  ? SCOPES.filter((x) => x === s || props.value.includes(x))
                  : props.value.filter((x) => x !== s),
              )
            }
          />{' '}
          <code>{s}</code>
        </label>
      ))}
    </fieldset>
  );
}

export function Tokens(props: { api: Api; tenant: Tenant }) {
  const { api, tenant } = props;
  const { adminWrite } = useAccess();
  const [scopes, setScopes] = useState<Scope[]>([...SCOPES]);
  const base = `/v1/admin/tenants/${tenant.id}/tokens`;
  const list = useLoad((signal) => api.get<{ items: TokenInfo[] }>(base, signal), [tenant.id]);
  const [issued, setIssued] = useState<{ label: string; token: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const act = async (fn: () => Promise<void>): Promise<void> => {
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(err);
    }
    list.reload();
  };
  const rotate = () =>
    act(async () => {
      if (!confirm(`Rotate ${tenant.name}'s tokens? Every current token stops working at once.`)) return;
      const r = await api.call<{ token: { token: string }; revoked: string[] }>('POST', `${base}/rotate`, { scopes });
      setIssued({ label: `New token for ${tenant.name}; ${r.revoked.length} revoked.`, token: r.token.token });
    });
  const add = () =>
    act(async () => {
      const r = await api.call<{ token: string }>('POST', base, { scopes });
      setIssued({ label: `Additional token for ${tenant.name}.`, token: r.token });
    });
  const revoke = (t: TokenInfo) =>
    act(async () => {
      if (!confirm(`Revoke token ${t.prefix}…?`)) return;
      await api.call('DELETE', `${base}/${t.id}`);
    });
  return (
    <div class="tokens" aria-label={`Tokens of ${tenant.name}`} role="region">
      <h3>Tokens of {tenant.name}</h3>
      {issued ? <ShownOnce {...issued} onDone={() => setIssued(null)} /> : null}
      <ErrorBox error={error ?? list.error} />
      {adminWrite ? (
        <>
          <ScopePicker value={scopes} onChange={setScopes} />
          <p class="actions">
            <button type="button" onClick={() => void rotate()} disabled={scopes.length === 0}>
              Rotate (new token, revoke all others)
            </button>
            <button type="button" onClick={() => void add()} disabled={scopes.length === 0}>
              Add a token
            </button>
          </p>
        </>
      ) : null}
      {list.data ? (
        <table>
          <caption class="sr-only">Tokens</caption>
          <thead>
            <tr>
              <th scope="col">Prefix</th>
              <th scope="col">Scopes</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((t) => (
              <tr key={t.id}>
                <td>
                  <code>{t.prefix}…</code>
                </td>
                <td data-testid="token-scopes">{t.scopes?.join(' ') ?? ''}</td>
                <td>
                  <When at={t.created_at} />
                </td>
                <td>
                  <When at={t.last_used_at} />
                </td>
                <td>{t.revoked_at ? 'revoked' : 'active'}</td>
                <td>
                  {t.revoked_at || !adminWrite ? null : (
                    <button type="button" class="small danger" onClick={() => void revoke(t)}>
                      Revoke <span class="sr-only">token {t.prefix}</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
