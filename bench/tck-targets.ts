/**
 * The systems the A2A compatibility kit (TCK) is run against, started on loopback until Ctrl-C
 * (`npx tsc -p tsconfig.json && node dist/bench/tck-targets.js`):
 *
 *   sdk      the official @a2a-js/sdk server alone (bench/tck-agent.ts): in-memory task store, no push
 *   proxy    Arbiter in gateway mode: a tenant's agent `tck-proxy` whose backend is that SDK server
 *   echo     Arbiter hosting an agent on the offline `echo` model (`tck-echo`), for reference
 *
 * Arbiter runs as a child process with its own ARBITER_HOME (embedded database; `TCK_DATABASE_URL` selects a
 * PostgreSQL server instead, on which a fresh database is created and dropped at exit) and
 * `ARBITER_A2A_ALLOW_PRIVATE=true`, so it may reach the SDK server on loopback.
 *
 * The kit looks for the card at the origin's `/.well-known/agent-card.json`, fetched without credentials, and
 * calls the HTTP+JSON routes at the origin's root (`/message:send`, `/tasks/…`). An Arbiter agent lives under
 * `/v1/a2a/agents/<id>` and its card is the tenant's (a bearer token is needed), so each Arbiter agent is given
 * an origin of its own here: a plain loopback front that forwards every request with its headers untouched,
 * prefixing the path with the agent's, and fetches the card for the kit with the tenant's token. Everything else
 * the kit sends carries its own credentials (`A2A_AUTH_HEADERS`, printed below).
 *
 * TCK_STREAMING_TIMEOUT (seconds, default 2, the kit's own variable): the SDK agent keeps a task whose message id
 * starts with `test-resubscribe-message-id` working for 2.5 times that.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTckAgent } from './tck-agent.js';
import { arbiter, cleanup, createDatabase } from './targets.js';

interface Front {
  url: string;
  close(): Promise<void>;
}

/** An origin of its own for one Arbiter agent (see above). Host and every other header pass through as sent. */
async function agentOrigin(arbiterUrl: string, agentId: string, token: string): Promise<Front> {
  const upstream = new URL(arbiterUrl);
  const prefix = `/v1/a2a/agents/${agentId}`;
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const headers = { ...req.headers };
    let target = path.startsWith('/v1/a2a/agents/') ? path : `${prefix}${path === '/' ? '' : path}`;
    if (req.method === 'GET' && /^\/\.well-known\/agent(-card)?\.json(\?|$)/.test(path)) {
      target = `${prefix}/agent-card.json`;
      headers.authorization = `Bearer ${token}`;
      headers['a2a-version'] ??= '1.0';
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: target, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function main(): Promise<void> {
  const timeoutS = Number(process.env.TCK_STREAMING_TIMEOUT ?? 2);
  const sdk = await startTckAgent(Math.round(timeoutS * 2500));
  const databaseUrl = process.env.TCK_DATABASE_URL ? (await createDatabase('tck')).url : undefined;
  const arb = await arbiter('tck', databaseUrl, 1, '.', 'opaque', {
    ARBITER_A2A_ALLOW_PRIVATE: 'true',
    // The webhook receiver the kit's push tests name.
    ARBITER_PUSH_ALLOWLIST: 'localhost:8888',
  });
  const base = arb.urls[0];
  const auth = arb.headers.authorization;
  const token = auth.slice('Bearer '.length);
  const post = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
  };
  await post('/v1/remote-agents', { name: 'tck-sdk', url: sdk.url });
  await post('/v1/agents', { id: 'tck-proxy', backend: { remote: 'tck-sdk' } });
  await post('/v1/agents', { id: 'tck-echo', model: 'echo' });
  const proxy = await agentOrigin(base, 'tck-proxy', token);
  const echo = await agentOrigin(base, 'tck-echo', token);

  const headers = (withToken: boolean) =>
    `A2A_AUTH_HEADERS='${JSON.stringify({ ...(withToken ? { Authorization: auth } : {}), 'A2A-Version': '1.0' })}'`;
  process.stdout.write(
    [
      `sdk    ${sdk.url}  (card ${sdk.url}/.well-known/agent-card.json)`,
      `       ${headers(false)}`,
      `proxy  ${proxy.url}  (Arbiter agent ${base}/v1/a2a/agents/tck-proxy, card …/agent-card.json)`,
      `       ${headers(true)}`,
      `echo   ${echo.url}  (Arbiter agent ${base}/v1/a2a/agents/tck-echo, card …/agent-card.json)`,
      `       ${headers(true)}`,
      'Ctrl-C stops them all.',
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void Promise.all([proxy.close(), echo.close(), sdk.close()])
      .then(() => cleanup())
      .finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch(async (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  await cleanup();
  process.exit(1);
});
