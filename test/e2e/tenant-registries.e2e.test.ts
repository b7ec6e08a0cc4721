// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse } from '../helpers/a2a.js';
import { startEverythingHttp, startQuotingHttp, type HttpMcp } from '../helpers/mcp-servers.js';
import { startVoltLike, type PeerAgent } from '../helpers/peer-agents.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const MCP_TOKEN = 'tenant-mcp-secret-0001';

describe('per-tenant registries: /v1/remote-agents and /v1/mcp-servers', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let keyless: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let c: TestTenant;
  let d: TestTenant;
  let alpha: PeerAgent;
  let beta: PeerAgent;
  let mcp: HttpMcp;

  const script = (model: string, fn: (c: ScriptCall) => ScriptReply): string => {
    fake.scripts.set(model, fn);
    return `openai/${model}`;
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const lastMessage = (r: { body: any }): string => r.body.messages[r.body.messages.length - 1].content;

  /** Runs `commands` as one scripted response of a fresh agent of `tenant`; returns what the model got back. */
  let n = 0;
  const run = async (tenant: TestTenant, commands: string): Promise<string> => {
    const model = script(`reg-${++n}`, (call) => (call.call === 1 ? commands : 'done'));
    const id = `reg-${n}`;
    await newAgent(tenant, { id, model });
    const res = await fetch(`${server.url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    await readSse(res);
    const sent = requestsFor(`reg-${n}`);
    return sent.length > 1 ? lastMessage(sent.at(-1)!) : '';
  };
  const voltEntry = (peer: PeerAgent, id: string) => ({
    url: `${peer.url}/a2a/${id}`,
    card_url: `${peer.url}/.well-known/${id}/agent-card.json`,
  });
  const db = () => server.running.app.get<DataSource>(getDataSourceToken());

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    alpha = await startVoltLike('alpha');
    beta = await startVoltLike('beta');
    mcp = await startEverythingHttp(MCP_TOKEN);
    const env = { OPENAI_BASE_URL: `${fake.url}/v1`, ARBITER_DEFAULT_MODEL: 'openai/master' };
    // Loopback peers need the operator's allow-private switches; tenant entries are held to them as the files are.
    server = await startTestServer({
      env: {
        ...env,
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_MCP_ALLOW_PRIVATE: 'true',
        ARBITER_A2A_CARD_TTL_MS: '0',
        ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
      },
    });
    keyless = await startTestServer({ env });
    [a, b, c, d] = [
      await newTenant(server, 'reg-a'),
      await newTenant(server, 'reg-b'),
      await newTenant(server, 'reg-c'),
      await newTenant(server, 'reg-d'),
    ];
    await newAgent(c, { id: 'for-a', model: script('for-a-m', (call) => `for-a says: ${call.last}`) });
    writeFileSync(
      join(server.home, 'a2a_agents.json'),
      JSON.stringify({
        agents: {
          peer: voltEntry(alpha, 'alpha'),
          only_a: { ...voltEntry(alpha, 'alpha'), tenants: [a.id] },
        },
      }),
    );
  });
  after(async () => {
    await server.close();
    await keyless.close();
    await alpha.close();
    await beta.close();
    await mcp.close();
    await fake.stop();
  });

  it('two tenants with a remote of the same name each see and call only their own; a tenant without one gets the shared entry', async () => {
    const created = await a.client.post('/v1/remote-agents', {
      name: 'peer',
      url: `${server.url}/v1/a2a/agents/for-a`,
      auth: { type: 'bearer', token: c.token },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.auth, { type: 'bearer', token: 'set' });
    assert.ok(!created.text.includes(c.token));
    assert.equal((await b.client.post('/v1/remote-agents', { name: 'peer', ...voltEntry(beta, 'beta') })).status, 201);

    assert.match(await run(a, '/a2a call peer hello'), /\nfor-a says: hello\n/);
    assert.match(await run(b, '/a2a call peer hello'), /\nbeta heard: hello\n/);
    assert.match(await run(d, '/a2a call peer hello'), /\nalpha heard: hello\n/);
    // The roster of A's master agent names A's own peer (C's agent behind it), not the shared one.
    const list = await run(a, '/a2a list');
    assert.match(list, /\nonly_a — /);
    assert.match(list, /\npeer — /);
    assert.doesNotMatch(list, /beta/);
  });

  it('a shared file entry with a tenants list is seen by those tenants only', async () => {
    assert.match(await run(a, '/a2a call only_a hi'), /\nalpha heard: hi\n/);
    assert.match(await run(b, '/a2a call only_a hi'), /ERR: no remote agent named 'only_a'/);
    assert.doesNotMatch(await run(b, '/a2a list'), /only_a/);
    const admin = await server.admin.get('/v1/admin/registries/a2a-agents');
    assert.deepEqual(admin.body.items.find((i: { name: string }) => i.name === 'only_a').tenants, [a.id]);
  });

  it('reads never carry a secret; the row holds ciphertext only; the audit rows neither', async () => {
    const one = await a.client.get('/v1/remote-agents/peer');
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.auth, { type: 'bearer', token: 'set' });
    const list = await a.client.get('/v1/remote-agents');
    assert.deepEqual(
      list.body.items.map((i: { name: string }) => i.name),
      ['peer'],
    );
    assert.ok(!list.text.includes(c.token) && !one.text.includes(c.token));
    const rows = await db().query<{ config: unknown; secrets: string }[]>(
      `SELECT config, secrets FROM tenant_registry_entries WHERE tenant_id = $1`,
      [a.id],
    );
    assert.equal(rows.length, 1);
    assert.match(rows[0].secrets, /^v1:[^:]+:[^:]+:[^:]+$/);
    assert.ok(!JSON.stringify(rows).includes(c.token), 'the token is nowhere in the row');
    const audit = await db().query<{ action: string; actor_id: string; detail: unknown }[]>(
      `SELECT action, actor_id, detail FROM audit_log WHERE tenant_id = $1 AND action LIKE 'remote_agent.%'`,
      [a.id],
    );
    assert.deepEqual(
      audit.map((r) => r.action),
      ['remote_agent.create'],
    );
    assert.match(audit[0].actor_id, /^token:/);
    assert.ok(!JSON.stringify(audit).includes(c.token));
    // B's read of its own list does not show A's.
    assert.ok(!(await b.client.get('/v1/remote-agents')).text.includes('for-a'));
    assert.equal((await b.client.get('/v1/remote-agents/nope')).status, 404);
  });

  it('PATCH and DELETE: the change is used at once; deleting uncovers the shared entry', async () => {
    const patched = await b.client.patch('/v1/remote-agents/peer', voltEntry(alpha, 'alpha'));
    assert.equal(patched.status, 200, patched.text);
    assert.match(await run(b, '/a2a call peer again'), /\nalpha heard: again\n/);
    assert.equal((await a.client.delete('/v1/remote-agents/peer')).status, 204);
    assert.match(await run(a, '/a2a call peer back'), /\nalpha heard: back\n/);
    assert.equal((await a.client.delete('/v1/remote-agents/peer')).status, 404);
  });

  it('a PATCH that points an entry’s url at another origin must give its secrets again: else refused, nothing changed', async () => {
    await newAgent(c, { id: 'for-a-too', model: script('for-a-too-m', (call) => `for-a-too says: ${call.last}`) });
    const home = `${server.url}/v1/a2a/agents/for-a`;
    const created = await a.client.post('/v1/remote-agents', {
      name: 'mover',
      url: home,
      auth: { type: 'bearer', token: c.token },
    });
    assert.equal(created.status, 201, created.text);
    // Its card elsewhere (fetched without the token, which goes to the url's origin only): taken, the token kept.
    const card = `${beta.url}/.well-known/beta/agent-card.json`;
    const carded = await a.client.patch('/v1/remote-agents/mover', { card_url: card });
    assert.equal(carded.status, 200, carded.text);
    assert.deepEqual(carded.body.auth, { type: 'bearer', token: 'set' });
    // The url to another origin, the card's origin too, keeping the stored token: refused, naming `auth`.
    for (const url of [`${beta.url}/a2a/beta`, `${alpha.url}/a2a/alpha`]) {
      const moved = await a.client.patch('/v1/remote-agents/mover', { url });
      assert.equal(moved.status, 400, moved.text);
      assert.deepEqual(
        moved.body.details.map((d: { field: string }) => d.field),
        ['auth'],
      );
      assert.match(moved.text, /another origin; give auth again in the same request, or null to remove it/);
    }
    const kept = await a.client.get('/v1/remote-agents/mover');
    assert.equal(kept.body.url, home);
    assert.deepEqual(kept.body.auth, { type: 'bearer', token: 'set' });
    assert.equal((await a.client.patch('/v1/remote-agents/mover', { card_url: null })).status, 200);
    assert.match(await run(a, '/a2a call mover still'), /\nfor-a says: still\n/);
    // Within the origin the token stays, and is used.
    const path = await a.client.patch('/v1/remote-agents/mover', { url: `${server.url}/v1/a2a/agents/for-a-too` });
    assert.equal(path.status, 200, path.text);
    assert.deepEqual(path.body.auth, { type: 'bearer', token: 'set' });
    assert.match(await run(a, '/a2a call mover there'), /\nfor-a-too says: there\n/);
    // To another origin with `auth` given again (here removed): taken.
    const away = await a.client.patch('/v1/remote-agents/mover', { ...voltEntry(beta, 'beta'), auth: null });
    assert.equal(away.status, 200, away.text);
    assert.equal(away.body.auth, undefined);
    assert.match(await run(a, '/a2a call mover away'), /\nbeta heard: away\n/);
    assert.equal((await a.client.delete('/v1/remote-agents/mover')).status, 204);

    // An MCP server's header values are secrets too: both fields named, the entry as it was.
    const mcpHome = await a.client.post('/v1/mcp-servers', {
      name: 'mcp-mover',
      url: mcp.url,
      headers: { 'x-extra': 'header-secret-2' },
      auth: { type: 'bearer', token: MCP_TOKEN },
    });
    assert.equal(mcpHome.status, 201, mcpHome.text);
    const moved = await a.client.patch('/v1/mcp-servers/mcp-mover', { url: `${beta.url}/mcp` });
    assert.equal(moved.status, 400, moved.text);
    assert.deepEqual(
      moved.body.details.map((d: { field: string }) => d.field),
      ['auth', 'headers'],
    );
    const halfway = await a.client.patch('/v1/mcp-servers/mcp-mover', { url: `${beta.url}/mcp`, auth: null });
    assert.equal(halfway.status, 400, halfway.text);
    assert.deepEqual(
      halfway.body.details.map((d: { field: string }) => d.field),
      ['headers'],
    );
    assert.equal((await a.client.get('/v1/mcp-servers/mcp-mover')).body.url, mcp.url);
    assert.match(await run(a, '/mcp call mcp-mover echo {"message":"hi"}'), /\nEcho: hi\n/);
    assert.equal((await a.client.delete('/v1/mcp-servers/mcp-mover')).status, 204);
  });

  it('a tenant may name no host variable, file, command or operator-only field; private addresses follow the operator', async () => {
    const refused = async (on: TestServer, tenant: TestTenant, path: string, body: object, field: RegExp) => {
      const res = await on.as(tenant.token).post(path, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(JSON.stringify(res.body.details), field);
      return res;
    };
    const url = `${beta.url}/a2a/beta`;
    await refused(server, a, '/v1/remote-agents', { name: 'x', url, auth: { token_env: 'HOME' } }, /auth\.token_env/);
    await refused(
      server,
      a,
      '/v1/remote-agents',
      { name: 'x', url, auth: { type: 'mtls', cert_file: '/etc/passwd', key_file: '/etc/shadow' } },
      /auth\.cert_file/,
    );
    await refused(server, a, '/v1/remote-agents', { name: 'x', url, tenants: [b.id] }, /tenants/);
    await refused(server, a, '/v1/mcp-servers', { name: 'x', url: mcp.url, command: 'sh' }, /command/);
    await refused(server, a, '/v1/mcp-servers', { name: 'x', url: mcp.url, headers_env: { a: 'HOME' } }, /headers_env/);
    await refused(
      server,
      a,
      '/v1/remote-agents',
      { name: 'x', url: 'http://169.254.169.254/a2a' },
      /link-local|blocked/,
    );
    // Without ARBITER_A2A_ALLOW_PRIVATE a tenant's loopback entry is refused, naming the setting.
    const t = await newTenant(keyless, 'keyless-t');
    const loop = await refused(keyless, t, '/v1/remote-agents', { name: 'x', url }, /ARBITER_A2A_ALLOW_PRIVATE/);
    assert.match(loop.text, /loopback/);
    // No sealing key: an inline secret is refused, naming ARBITER_SECRETS_KEY; an entry without one is taken.
    const nokey = await refused(
      keyless,
      t,
      '/v1/remote-agents',
      { name: 'x', url: 'https://peer.example.com/a2a', auth: { type: 'bearer', token: 'atr_secret' } },
      /auth\.token/,
    );
    assert.match(nokey.text, /ARBITER_SECRETS_KEY/);
    const open = await keyless
      .as(t.token)
      .post('/v1/remote-agents', { name: 'x', url: 'https://peer.example.com/a2a' });
    assert.equal(open.status, 201, open.text);
  });

  it('MCP: a tenant’s own server over streamable HTTP (its token sealed), seen and called by that tenant only', async () => {
    const created = await a.client.post('/v1/mcp-servers', {
      name: 'mine',
      url: mcp.url,
      description: 'A’s tools',
      headers: { 'x-extra': 'header-secret-1' },
      auth: { type: 'bearer', token: MCP_TOKEN },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.auth, { type: 'bearer', token: 'set' });
    assert.deepEqual(created.body.headers, { 'x-extra': 'set' });
    assert.equal(
      await run(a, '/mcp call mine echo {"message":"hi"}'),
      '[/mcp call mine echo {"message":"hi"}]\nEcho: hi\n[END MCP]',
    );
    assert.match(await run(a, '/mcp list'), /^\[\/mcp list\]\nmine \(http\) — A’s tools: \d+ tools\n/);
    assert.match(await run(b, '/mcp call mine echo {"message":"hi"}'), /ERR: no mcp server named 'mine'/);
    assert.match(await run(b, '/mcp list'), /no mcp servers configured/);
    const rows = await db().query<{ secrets: string }[]>(
      `SELECT config, secrets FROM tenant_registry_entries WHERE tenant_id = $1 AND kind = 'mcp'`,
      [a.id],
    );
    assert.ok(!JSON.stringify(rows).includes(MCP_TOKEN) && !JSON.stringify(rows).includes('header-secret-1'));
    assert.ok(!(await a.client.get('/v1/mcp-servers')).text.includes(MCP_TOKEN));
    // An agent that names no tools lists /mcp on its card for the tenant that sees a server, and not for the other.
    const skillIds = async (t: TestTenant, id: string) => {
      await newAgent(t, { id });
      const card = await t.client.get(`/v1/a2a/agents/${id}/agent-card.json`);
      assert.equal(card.status, 200, card.text);
      return (card.body.skills as { id: string }[]).map((s) => s.id);
    };
    assert.ok((await skillIds(a, 'card-a')).includes('mcp'));
    assert.ok(!(await skillIds(b, 'card-b')).includes('mcp'));
  });

  it("what an MCP server says in a failure has the entry's secrets taken out; a tool it lists with a schema too deep is left out", async () => {
    const quoting = await startQuotingHttp();
    try {
      const key = `mcp-key-${randomBytes(6).toString('hex')}`;
      const token = `mcp-token-${randomBytes(6).toString('hex')}`;
      const created = await a.client.post('/v1/mcp-servers', {
        name: 'quoting',
        url: quoting.url,
        headers: { 'x-api-key': key },
        auth: { type: 'bearer', token },
      });
      assert.equal(created.status, 201, created.text);
      // In a failed tool result, and in a JSON-RPC error.
      const failed = await run(a, '/mcp call quoting quote {}');
      assert.match(
        failed,
        /ERR: tool quoting\/quote failed: refused: key \[redacted\], token \[redacted\] \(sent as "Bearer \[redacted\]"\)/,
      );
      const erred = await run(a, '/mcp call quoting explode {}');
      assert.match(
        erred,
        /ERR: mcp server 'quoting' error -32603: exploded: key \[redacted\], token \[redacted\] \(sent as "Bearer \[redacted\]"\)/,
      );
      // And in a result that succeeds: the entry's secrets only (a token of the server's own would stay).
      const mirrored = await run(a, '/mcp call quoting mirror {}');
      assert.match(mirrored, /you sent: key \[redacted\], token \[redacted\] \(sent as "Bearer \[redacted\]"\)/);
      for (const fed of [failed, erred, mirrored]) assert.ok(!fed.includes(key) && !fed.includes(token), fed);
      // A tool whose input schema is nested past the JSON limit is not offered (it could be neither shown nor
      // checked against); the others are.
      const tools = await run(a, '/mcp tools quoting');
      assert.match(tools, /^quote — /m);
      assert.match(tools, /^explode — /m);
      assert.doesNotMatch(tools, /deep/);
      // What it says of its tools (a description, a schema) is the server's word too: the secrets taken out.
      assert.match(tools, /listed for key \[redacted\], token \[redacted\]/);
      assert.match(tools, /"description":"key \[redacted\], token \[redacted\]/);
      assert.ok(!tools.includes(key) && !tools.includes(token), tools);
      assert.match(await run(a, '/mcp call quoting deep {}'), /ERR: mcp server 'quoting' has no tool 'deep'/);
      assert.equal((await a.client.delete('/v1/mcp-servers/quoting')).status, 204);
    } finally {
      await quoting.close();
    }
  });

  it("an entry's own headers never follow a redirect to another origin; what a remote's card says has its secrets taken out", async () => {
    /** A loopback server answering each request with `handle`; its URL. */
    const listen = async (handle: (req: IncomingMessage, res: ServerResponse) => void) => {
      const http = createServer(handle);
      await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
      return { url, close: () => (http.closeAllConnections(), new Promise((r) => http.close(r))) };
    };
    const quoting = await startQuotingHttp();
    // Moves every request to the quoting MCP server, on another origin (307: the method and body go on).
    const mover = await listen((_req, res) => res.writeHead(307, { location: quoting.url }).end());
    const key = `hdr-key-${randomBytes(6).toString('hex')}`;
    // An A2A remote whose card quotes the header it was sent, in every text of it.
    const peer = await listen((req, res) => {
      const heard = String(req.headers['x-api-key'] ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          name: `quoter ${heard}`,
          description: `a card fetched with ${heard}`,
          supportedInterfaces: [
            { url: `${peer.url}/rpc/${heard}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
          version: '1',
          capabilities: {},
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [{ id: 'quote', name: 'quoting', description: `says ${heard}`, tags: [heard] }],
        }),
      );
    });
    try {
      const token = `mcp-token-${randomBytes(6).toString('hex')}`;
      const moved = await a.client.post('/v1/mcp-servers', {
        name: 'moved',
        url: `${mover.url}/mcp`,
        headers: { 'x-api-key': key },
        auth: { type: 'bearer', token },
      });
      assert.equal(moved.status, 201, moved.text);
      // The tool is reached at the other origin, which was sent neither the entry's header nor its token.
      assert.match(await run(a, '/mcp call moved mirror {}'), /you sent: key , token {2}\(sent as ""\)/);

      const remote = await a.client.post('/v1/remote-agents', {
        name: 'quoter',
        url: `${peer.url}/rpc`,
        auth: { type: 'header', name: 'X-Api-Key', value: key },
      });
      assert.equal(remote.status, 201, remote.text);
      const card = await run(a, '/a2a card quoter');
      assert.match(card, /^name: quoter \[redacted\]$/m);
      assert.match(card, /^description: a card fetched with \[redacted\]$/m);
      assert.match(card, /^ {2}- quoting: says \[redacted\]$/m);
      assert.match(card, /^interface: JSONRPC 1\.0 http:\/\/127\.0\.0\.1:\d+\/rpc\/\[redacted\]$/m);
      const list = await run(a, '/a2a list');
      assert.match(list, /\nquoter — a card fetched with \[redacted\] \(skills: quoting\)/);
      await newAgent(a, { id: 'front-quoter', backend: { remote: 'quoter' } });
      const own = await a.client.get('/v1/a2a/agents/front-quoter/agent-card.json', { 'a2a-version': '1.0' });
      assert.equal(own.status, 200, own.text);
      assert.equal(own.body.description, 'a card fetched with [redacted]');
      assert.deepEqual(own.body.skills[0].tags, ['[redacted]']);
      for (const text of [card, list, own.text]) assert.ok(!text.includes(key), text);
    } finally {
      await a.client.delete('/v1/agents/front-quoter');
      await a.client.delete('/v1/remote-agents/quoter');
      await a.client.delete('/v1/mcp-servers/moved');
      await Promise.all([quoting.close(), mover.close(), peer.close()]);
    }
  });
});
