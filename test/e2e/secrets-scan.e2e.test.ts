import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { readSse, waitFor } from '../helpers/a2a.js';
import { freshDatabase, seedEmbeddedDatabase, type TestDatabase } from '../helpers/database.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { HttpClient } from '../helpers/http.js';
import { startEverythingHttp, type HttpMcp } from '../helpers/mcp-servers.js';
import { startVoltLike, type PeerAgent } from '../helpers/peer-agents.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/** A distinctive secret: found anywhere it should not be, it can only have come from where it was given. */
const secret = (what: string): string => `${what}-${randomBytes(16).toString('hex')}`;

/**
 * Secrets a tenant gives Arbiter — a remote agent's bearer token, an MCP server's header value and token, a push
 * config's token and credentials — are used (each call goes out with them) and then looked for everywhere Arbiter
 * writes or shows something: the process's whole output at debug level, every row of every table (where only
 * ciphertext may stand), the task's events, the agent card and `/metrics`. None may hold one.
 */
describe('secrets scan: a tenant’s secrets appear in no log, row, event, card or metric', () => {
  const SECRETS = {
    remoteBearer: secret('remote-bearer'),
    mcpHeader: secret('mcp-header'),
    mcpToken: secret('mcp-token'),
    pushToken: secret('push-token'),
    pushCredentials: secret('push-cred'),
  };
  const admin = `adm_${randomBytes(24).toString('hex')}`;
  let home: string;
  let db: TestDatabase;
  let server: ServerProcess | undefined;
  let fake: FakeProvider;
  let peer: PeerAgent;
  let mcp: HttpMcp;
  const receiver = new WebhookReceiver();
  /** Everything read from the running server, scanned at the end. */
  const seen: { where: string; text: string }[] = [];

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    peer = await startVoltLike('alpha');
    mcp = await startEverythingHttp(SECRETS.mcpToken);
    await receiver.start();
    home = tempHome();
    db = await freshDatabase();
    if (!db.url) seedEmbeddedDatabase(home);
    server = await startServerProcess({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      LOG_LEVEL: 'debug',
      ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
      ARBITER_A2A_ALLOW_PRIVATE: 'true',
      ARBITER_MCP_ALLOW_PRIVATE: 'true',
      ARBITER_PUSH_ALLOWLIST: `127.0.0.1:${receiver.port}`,
      ARBITER_DEFAULT_MODEL: 'echo',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      OPENAI_API_KEY: 'sk-test-secrets-scan',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      OPENROUTER_BASE_URL: 'http://127.0.0.1:9/v1',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
    });
  });
  after(async () => {
    await server?.stop('SIGKILL');
    await fake?.stop();
    await peer?.close();
    await mcp?.close();
    await receiver.stop();
    await db?.drop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('uses every secret, then finds none of them anywhere', async () => {
    const s = server!;
    const http = new HttpClient(s.url);
    const created = await http.withToken(admin).post('/v1/admin/tenants', { name: 'scan' });
    assert.equal(created.status, 201, created.text);
    const tenant = http.withToken(created.body.token.token as string);

    const remote = await tenant.post('/v1/remote-agents', {
      name: 'peer',
      url: `${peer.url}/a2a/alpha`,
      card_url: `${peer.url}/.well-known/alpha/agent-card.json`,
      auth: { type: 'bearer', token: SECRETS.remoteBearer },
    });
    assert.equal(remote.status, 201, remote.text);
    const server2 = await tenant.post('/v1/mcp-servers', {
      name: 'tools',
      url: mcp.url,
      headers: { 'x-api-key': SECRETS.mcpHeader },
      auth: { type: 'bearer', token: SECRETS.mcpToken },
    });
    assert.equal(server2.status, 201, server2.text);
    seen.push({ where: 'POST responses', text: remote.text + server2.text });

    // An agent whose model calls both; the MCP server answers only with its token, so the call shows it was sent.
    fake.scripts.set('scanner', (c) =>
      c.call === 1 ? '/a2a call peer hello\n/mcp call tools echo {"message":"hi"}' : 'done',
    );
    assert.equal((await tenant.post('/v1/agents', { id: 'scanner', model: 'openai/scanner' })).status, 201);
    const chat = await fetch(`${s.url}/v1/agents/scanner/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.body.token.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    const { events } = await readSse(chat);
    seen.push({ where: 'chat stream', text: JSON.stringify(events) });
    const fed =
      fake.requests
        .filter((r) => r.body.model === 'scanner')
        .at(-1)
        ?.body.messages.at(-1)?.content ?? '';
    assert.match(fed, /alpha heard: hello/, 'the remote agent answered');
    assert.match(fed, /Echo: hi/, 'the MCP server took its token');
    assert.ok(mcp.auth.includes(`Bearer ${SECRETS.mcpToken}`));

    // A push config with a token and credentials, delivered to a receiver on loopback.
    const sent = await fetch(`${s.url}/v1/a2a/agents/scanner`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${created.body.token.token}`,
        'content-type': 'application/json',
        'A2A-Version': '1.0',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'push me' }] },
          configuration: {
            taskPushNotificationConfig: {
              url: receiver.url,
              token: SECRETS.pushToken,
              authentication: { scheme: 'Bearer', credentials: SECRETS.pushCredentials },
            },
          },
        },
      }),
    });
    const sendText = await sent.text();
    assert.equal(sent.status, 200, sendText);
    await waitFor(async () =>
      receiver.accepted.some((d) => JSON.stringify(d.body).includes('COMPLETED')) ? true : undefined,
    );
    const delivered = receiver.accepted[0];
    assert.equal(delivered?.headers['x-a2a-notification-token'], SECRETS.pushToken, 'the push token was sent');

    // What the API shows: entries, the task list, each task and its events, the card, the admin views, metrics.
    const reads = [
      '/v1/remote-agents',
      '/v1/remote-agents/peer',
      '/v1/mcp-servers',
      '/v1/mcp-servers/tools',
      '/v1/requests?limit=100',
      '/v1/a2a/agents/scanner/.well-known/agent-card.json',
    ];
    for (const path of reads) {
      const r = await tenant.get(path);
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      seen.push({ where: path, text: r.text });
    }
    const tasks = (await tenant.get('/v1/requests?limit=100')).body.items as { id: string }[];
    assert.ok(tasks.length >= 2, 'the chat and the pushed task');
    for (const t of tasks) {
      const one = await tenant.get(`/v1/requests/${t.id}`);
      seen.push({ where: `/v1/requests/${t.id}`, text: one.text });
      const ev = await fetch(`${s.url}/v1/requests/${t.id}/events`, {
        headers: { authorization: `Bearer ${created.body.token.token}` },
      });
      seen.push({ where: `/v1/requests/${t.id}/events`, text: await ev.text() });
    }
    for (const path of ['/v1/admin/registries/a2a-agents', '/v1/admin/registries/mcp-servers', '/v1/admin/audit']) {
      const r = await http.withToken(admin).get(path);
      seen.push({ where: path, text: r.text });
    }
    const metrics = await http.withToken(admin).get('/metrics');
    assert.equal(metrics.status, 200);
    seen.push({ where: '/metrics', text: metrics.text });

    // Every row of every table, read once the server has stopped (an embedded database is its process's alone).
    assert.equal(await s.stop('SIGTERM'), 0);
    seen.push({ where: 'stdout', text: s.stdout() }, { where: 'stderr', text: s.stderr() });
    assert.match(s.stdout(), /"level":(20|"debug")/, 'debug lines were logged');
    const rows = await allRows(db, home);
    assert.ok(rows.length > 0);
    seen.push(...rows);
    const sealed = rows.find((r) => r.where === 'tenant_registry_entries')?.text ?? '';
    assert.match(sealed, /"secrets":"[^"]+"/, 'the entries keep their secrets as ciphertext');

    for (const [name, value] of Object.entries(SECRETS)) {
      for (const { where, text } of seen) {
        assert.ok(!text.includes(value), `the ${name} secret is in ${where}`);
        // Nor in the forms an encoder might have written it in.
        const b64 = Buffer.from(value).toString('base64');
        assert.ok(!text.includes(b64), `the ${name} secret is in ${where} (base64)`);
      }
    }
  });
});

/** Every row of every table of the public schema, one entry per table (`row_to_json`). */
async function allRows(db: TestDatabase, home: string): Promise<{ where: string; text: string }[]> {
  const tablesSql = `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`;
  const rowsSql = (t: string) => `SELECT row_to_json(x)::text AS j FROM "${t.replace(/"/g, '""')}" x`;
  const out: { where: string; text: string }[] = [];
  if (db.url) {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const tables = (await c.query<{ table_name: string }>(tablesSql)).rows.map((r) => r.table_name);
      for (const t of tables) {
        const rows = (await c.query<{ j: string }>(rowsSql(t))).rows;
        out.push({ where: t, text: rows.map((r) => r.j).join('\n') });
      }
    } finally {
      await c.end();
    }
    return out;
  }
  const lite = await PGlite.create({ dataDir: join(home, 'pgdata') });
  try {
    const tables = (await lite.query<{ table_name: string }>(tablesSql)).rows.map((r) => r.table_name);
    for (const t of tables) {
      const rows = (await lite.query<{ j: string }>(rowsSql(t))).rows;
      out.push({ where: t, text: rows.map((r) => r.j).join('\n') });
    }
  } finally {
    await lite.close();
  }
  return out;
}
