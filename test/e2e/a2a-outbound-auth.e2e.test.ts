import { randomBytes, randomUUID } from 'node:crypto';
// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readSse } from '../helpers/a2a.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { GuardedAgent } from '../helpers/guarded-agent.js';
import { demoClients, startIdp, type TestIdp } from '../helpers/oidc-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SECRET = 'arbiter-outbound-secret-value';
const OUTBOUND = { id: 'arbiter-outbound', secret: SECRET, tokenExchange: true };
const REMOTE_RESOURCE = 'urn:remote-agent';
const API_KEY = 'api-key-for-the-keyed-agent';

/** A CA, a server certificate for 127.0.0.1 and a client certificate it signs (openssl). */
function certificates(dir: string): Record<'ca' | 'serverKey' | 'serverCert' | 'clientKey' | 'clientCert', string> {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=test-ca'],
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  const leaf = (name: string, cn: string, ext: string) => {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    run(
      ...['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
      ...['-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`],
    );
  };
  leaf('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  leaf('client', 'arbiter-client', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    ca: join(dir, 'ca.pem'),
    serverKey: read('server.key'),
    serverCert: read('server.pem'),
    clientKey: join(dir, 'client.key'),
    clientCert: join(dir, 'client.pem'),
  };
}

/** A token endpoint that answers an HTML page (a login portal, a proxy's error page). */
async function htmlEndpoint(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hi</html>'),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`, server };
}

describe('outbound credentials: /a2a to guarded remotes (OAuth client credentials, header, mTLS, token exchange)', () => {
  let idp: TestIdp;
  let server: TestServer;
  let tenant: TestTenant;
  let secure: GuardedAgent;
  let keyed: GuardedAgent;
  let mutual: GuardedAgent;
  let html: { url: string; server: Server };
  let certs: ReturnType<typeof certificates>;
  let acmeId = '';
  let acmeBuilder = '';

  /** Runs `message` through the echo model on /v1/orchestrate as `token`; returns the reply (the tool results). */
  const run = async (message: string, token = tenant.token): Promise<string> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
    });
    assert.equal(res.status, 200);
    const { events } = await readSse(res);
    const done = events.find((e) => e.event === 'done');
    assert.ok(done, 'the stream ends with done');
    return String((done.data as { content?: unknown }).content);
  };

  before(async () => {
    idp = await startIdp([...demoClients, OUTBOUND], { resources: { [REMOTE_RESOURCE]: 'remote-agent' } });
    const jwt = { jwksUri: idp.jwksUri, issuer: idp.issuer, audience: 'remote-agent' };
    secure = new GuardedAgent('secure', { jwt });
    keyed = new GuardedAgent('keyed', { header: { name: 'X-Api-Key', value: API_KEY } });
    certs = certificates(mkdtempSync(join(tmpdir(), 'arbiter-mtls-')));
    mutual = new GuardedAgent('mutual', {
      tls: { key: certs.serverKey, cert: certs.serverCert, ca: readFileSync(certs.ca, 'utf8') },
    });
    await Promise.all([secure.start(), keyed.start(), mutual.start()]);
    html = await htmlEndpoint();
    process.env.ARBITER_TEST_OUTBOUND_SECRET = SECRET;
    process.env.ARBITER_TEST_API_KEY = API_KEY;
    const idpHost = new URL(idp.issuer).host;
    const tokenUrl = `${idp.issuer}/token`;
    const oauth = { token_url: tokenUrl, client_id: OUTBOUND.id, client_secret_env: 'ARBITER_TEST_OUTBOUND_SECRET' };
    const agents = {
      secure: { url: secure.url, auth: { type: 'oauth2_client_credentials', ...oauth, resource: REMOTE_RESOURCE } },
      down: {
        url: secure.url,
        auth: { type: 'oauth2_client_credentials', ...oauth, token_url: 'http://127.0.0.1:9/token' },
      },
      html: { url: secure.url, auth: { type: 'oauth2_client_credentials', ...oauth, token_url: html.url } },
      keyed: { url: keyed.url, auth: { type: 'header', name: 'X-Api-Key', value_env: 'ARBITER_TEST_API_KEY' } },
      mutual: {
        url: mutual.url,
        auth: { type: 'mtls', cert_file: certs.clientCert, key_file: certs.clientKey, ca_file: certs.ca },
      },
      anonymous: { url: mutual.url },
      exchanger: {
        url: secure.url,
        auth: { type: 'token_exchange', ...oauth, resource: REMOTE_RESOURCE, actor_token: true },
      },
    };
    server = await startTestServer({
      env: {
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
        ARBITER_IDENTITY_ALLOWLIST: idpHost,
        ARBITER_TOKEN_ENDPOINT_ALLOWLIST: `${idpHost},127.0.0.1:9,${new URL(html.url).host}`,
      },
      prepareHome: (home) => writeFileSync(join(home, 'a2a_agents.json'), JSON.stringify({ agents })),
    });
    tenant = await newTenant(server);
  });

  after(async () => {
    await server?.close();
    await Promise.all([secure?.close(), keyed?.close(), mutual?.close(), idp?.close()]);
    html?.server.close();
  });

  it('oauth2_client_credentials: a token from the IdP for the remote, verified there with its JWKS, then reused', async () => {
    const out = await run('/a2a call secure hello');
    assert.match(out, /secure heard: hello/);
    const accepted = secure.seen.filter((s) => s.status === 200);
    assert.ok(accepted.length > 0);
    for (const s of accepted) {
      assert.equal(s.claims?.client_id, OUTBOUND.id);
      assert.equal(s.claims?.aud, 'remote-agent');
    }
    assert.match(await run('/a2a call secure again'), /secure heard: again/);
    assert.equal(secure.tokens.length, 1, 'one token, cached across calls');
  });

  it('a remote that refuses the token: one forced refresh, and the call goes through with the new token', async () => {
    const [current] = secure.tokens;
    secure.revoke(current);
    const before = secure.seen.length;
    assert.match(await run('/a2a call secure after revocation'), /secure heard: after revocation/);
    // The refused send, its one retry with a new token, then the task's reads with that token.
    const [refused, ...rest] = secure.seen.slice(before);
    assert.equal(refused?.status, 401);
    assert.equal(refused?.claims?.jti, current);
    assert.ok(rest.length > 0 && rest.every((s) => s.status === 200 && s.claims?.jti !== current));
    assert.equal(new Set(rest.map((s) => s.claims?.jti)).size, 1);
  });

  it('a 401 storm: concurrent calls share one refresh, each retries once, and none loops', async () => {
    const before = secure.seen.length;
    secure.refuse = 'all';
    secure.holdRefusals = 3;
    try {
      const out = await run(
        '/parallel\n/a2a call secure one\n/a2a call secure two\n/a2a call secure three\n/endparallel',
      );
      assert.equal(out.match(/ERR: HTTP 401/g)?.length, 3, out);
    } finally {
      secure.refuse = 0;
    }
    const storm = secure.seen.slice(before);
    assert.equal(storm.length, 6, 'each call: its request and one retry');
    const tokens = new Set(storm.map((s) => s.claims?.jti));
    assert.equal(tokens.size, 2, 'the refused token and one refreshed token, shared');
  });

  it('a token endpoint that is down or answers HTML: a clear error, never the secret', async () => {
    const down = await run('/a2a call down hi');
    assert.match(
      down,
      /ERR: card fetch failed: credentials: token endpoint http:\/\/127\.0\.0\.1:9 failed: ECONNREFUSED/,
    );
    const page = await run('/a2a call html hi');
    assert.match(
      page,
      /token endpoint http:\/\/127\.0\.0\.1:\d+ answered something else than a token \(text\/html, not JSON\)/,
    );
    for (const text of [down, page]) assert.ok(!text.includes(SECRET));
  });

  it('header: the API key in its named header, from the operator’s environment', async () => {
    assert.match(await run('/a2a call keyed hi'), /keyed heard: hi/);
    assert.ok(keyed.seen.length > 0 && keyed.seen.every((s) => s.status === 200 && s.header === API_KEY));
  });

  it('mtls: the client certificate from the operator’s files; without it the TLS handshake is refused', async () => {
    assert.match(await run('/a2a call mutual hi'), /mutual heard: hi/);
    assert.ok(mutual.seen.length > 0 && mutual.seen.every((s) => s.peerCn === 'arbiter-client'));
    assert.match(await run('/a2a call anonymous hi'), /ERR: card fetch failed: /);
  });

  it('token_exchange: on behalf of the JWT caller — the remote sees the caller as sub and Arbiter as act', async () => {
    const issuer = await server.admin.post('/v1/admin/issuers', {
      issuer: idp.issuer,
      audiences: ['arbiter'],
      tenant_claim: 'org',
    });
    assert.equal(issuer.status, 201, issuer.text);
    const acme = await server.admin.post('/v1/admin/tenants', {
      name: 'acme',
      external_id: 'acme',
      issue_token: false,
    });
    assert.equal(acme.status, 201, acme.text);
    acmeId = acme.body.tenant.id as string;
    const jwt = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    const before = secure.seen.length;
    const out = await run('/a2a call exchanger on behalf', jwt);
    assert.match(out, /secure heard: on behalf/);
    const calls = secure.seen.slice(before).filter((s) => s.status === 200);
    assert.ok(calls.length > 0);
    for (const s of calls) {
      assert.equal(s.claims?.sub, 'acme-agent');
      assert.deepEqual(s.claims?.act, { sub: OUTBOUND.id });
      assert.equal(s.claims?.aud, 'remote-agent');
    }
    assert.ok(!out.includes(jwt), 'the caller’s token is not echoed anywhere');
    // An opaque token has no JWT to exchange: the call is refused, saying why.
    assert.match(await run('/a2a call exchanger hi'), /ERR: credentials: token_exchange acts on behalf of the caller/);

    // The tenant registers its own OAuth-protected remote through the API (its client secret stored sealed), and
    // its agent delegates to it on behalf of the calling user; another tenant has no such remote.
    const builder = await server.admin.post(`/v1/admin/tenants/${acme.body.tenant.id}/tokens`, {
      scopes: ['agents:write'],
    });
    assert.equal(builder.status, 201, builder.text);
    const own = await server.as(builder.body.token).post('/v1/remote-agents', {
      name: 'own-exchanger',
      url: secure.url,
      auth: {
        type: 'token_exchange',
        token_url: `${idp.issuer}/token`,
        client_id: OUTBOUND.id,
        client_secret: SECRET,
        resource: REMOTE_RESOURCE,
        actor_token: true,
      },
    });
    assert.equal(own.status, 201, own.text);
    assert.ok(!own.text.includes(SECRET), 'the secret is never read back');
    const since = secure.seen.length;
    const fresh = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.match(await run('/a2a call own-exchanger for acme', fresh), /secure heard: for acme/);
    const mine = secure.seen.slice(since).filter((s) => s.status === 200);
    assert.ok(mine.length > 0);
    for (const s of mine) {
      assert.equal(s.claims?.sub, 'acme-agent');
      assert.deepEqual(s.claims?.act, { sub: OUTBOUND.id });
    }
    assert.match(await run('/a2a call own-exchanger hi'), /ERR: no remote agent named 'own-exchanger'/);
    acmeBuilder = builder.body.token as string;
  });

  it('token_exchange behind a remote-backed agent: the upstream is called on behalf of the JWT caller', async () => {
    // The previous test registered the issuer, the acme tenant and its own token-exchange remote.
    assert.ok(acmeBuilder, 'the previous test ran');
    const created = await server
      .as(acmeBuilder)
      .post('/v1/agents', { id: 'front', backend: { remote: 'own-exchanger' } });
    assert.equal(created.status, 201, created.text);
    const send = async (token: string, text: string) => {
      const res = await fetch(`${server.url}/v1/a2a/agents/front`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
        }),
      });
      const body = (await res.json()) as { result?: { task?: Record<string, any> }; error?: unknown };
      assert.ok(body.result?.task, JSON.stringify(body));
      return body.result.task;
    };
    const since = secure.seen.length;
    const jwt = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    const task = await send(jwt, 'through the gateway');
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(task));
    const calls = secure.seen.slice(since).filter((s) => s.status === 200);
    assert.ok(calls.length > 0);
    for (const s of calls) {
      assert.equal(s.claims?.sub, 'acme-agent');
      assert.deepEqual(s.claims?.act, { sub: OUTBOUND.id });
    }
    assert.ok(!JSON.stringify(task).includes(jwt), 'the caller’s token is not echoed anywhere');
    // An opaque token has no JWT to exchange: the task ends failed, saying why.
    const opaque = await server.admin.post(`/v1/admin/tenants/${acmeId}/tokens`, { scopes: ['a2a:invoke'] });
    assert.equal(opaque.status, 201, opaque.text);
    const refused = await send(opaque.body.token as string, 'no jwt');
    assert.equal(refused.status.state, 'TASK_STATE_FAILED');
    assert.match(JSON.stringify(refused.status.message), /token_exchange acts on behalf of the caller/);
  });
});
