// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { request, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { REAL_POSTGRES } from '../helpers/database.js';
import type { HttpClient } from '../helpers/http.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { within } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Routes that are open on purpose. Anything else must refuse a request without a token. */
const PUBLIC_ROUTES = new Set([
  'GET /v1/health',
  'GET /v1/health/ready',
  'GET /.well-known/agent-card.json',
  'GET /.well-known/jwks.json',
]);

describe('HTTP surface', () => {
  let server: TestServer;
  let t: TestTenant;
  before(async () => {
    server = await startTestServer({ env: { ARBITER_MAX_BODY_BYTES: '2048' } });
    t = await newTenant(server);
  });
  after(async () => {
    await server.close();
  });

  it('health: liveness and readiness', async () => {
    const live = await server.http.get('/v1/health');
    assert.equal(live.status, 200);
    assert.deepEqual(live.body, { status: 'ok' });
    const ready = await server.http.get('/v1/health/ready');
    assert.equal(ready.status, 200);
    // On PostgreSQL the connection that hears other replicas' writes is part of readiness.
    assert.deepEqual(ready.body, { status: 'ready', database: 'ok', ...(REAL_POSTGRES ? { notices: 'ok' } : {}) });
  });

  it('every route that is not explicitly public refuses a request without a token', async () => {
    const express = server.running.app.getHttpAdapter().getInstance() as unknown as {
      router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
    };
    const routes = express.router.stack
      .filter((l) => l.route && /^\/(v1|\.well-known)\//.test(l.route.path))
      .flatMap((l) => Object.keys(l.route!.methods).map((m) => ({ method: m.toUpperCase(), path: l.route!.path })))
      .filter((r) => !['OPTIONS', 'CONNECT', 'TRACE', '_ALL', 'ALL'].includes(r.method));
    assert.ok(routes.length >= 10, `found ${routes.length} routes`);
    for (const r of routes) {
      const key = `${r.method} ${r.path}`;
      const path = r.path.replace(/:(\w+)/g, 'x');
      const res = await server.http.request(r.method, path);
      if (PUBLIC_ROUTES.has(key)) assert.notEqual(res.status, 401, key);
      else {
        assert.equal(res.status, 401, `${key} is open without a token`);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/, key);
      }
    }
  });

  it('invalid JSON → 400 with the error envelope and a request id', async () => {
    const res = await t.client.request('POST', '/v1/agents', {
      raw: '{"id": "x",',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'invalid_json');
    assert.ok(res.body.request_id);
    assert.equal(res.headers.get('x-request-id'), res.body.request_id);
  });

  it('a JSON scalar body is refused', async () => {
    const res = await t.client.request('POST', '/v1/agents', {
      raw: '"text"',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
  });

  it('deeply nested JSON and unpaired surrogates → 400, never a 500', async () => {
    let deep = '1';
    for (let i = 0; i < 900; i++) deep = `[${deep}]`;
    for (const raw of [
      `{"id":"deep","rules":${deep}}`,
      '{"id":"s1","role":"\\ud800"}',
      '{"id":"s2","rules":["ok","x\\udc00y"]}',
    ]) {
      const res = await t.client.request('POST', '/v1/agents', {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, raw.slice(0, 40));
      assert.equal(res.body.code, 'validation_failed');
    }
    const tenant = await server.admin.request('POST', '/v1/admin/tenants', {
      raw: '{"name":"x\\udc00y"}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(tenant.status, 400);
    assert.equal((await t.client.get('/v1/agents/deep')).status, 404);
  });

  it('NUL in path parameters and query strings → 400 naming them, never a 500', async () => {
    const cases: [HttpClient, string, string][] = [
      [t.client, '/v1/requests/a%00b', 'id'],
      [t.client, '/v1/requests/a%00b/events', 'id'],
      [t.client, '/v1/requests?context_id=%00', 'context_id'],
      [t.client, '/v1/requests/00000000-0000-4000-8000-000000000000/events?since_seq=1%00', 'since_seq'],
      [t.client, '/v1/conversations/%00', 'id'],
      [t.client, '/v1/agents?cursor=x%00', 'cursor'],
      [server.admin, '/v1/admin/tenants/%00', 'id'],
      [server.admin, '/v1/admin/audit?tenant_id=%00', 'tenant_id'],
    ];
    for (const [client, path, field] of cases) {
      const res = await client.get(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.code, 'validation_failed', path);
      assert.ok(
        (res.body.details as { field: string }[]).some((d) => d.field === field),
        `${path} names ${field}: ${res.text}`,
      );
    }
  });

  it('a Last-Event-ID that is no event id of a stream → 400 naming it; one in range resumes', async () => {
    const events = '/v1/requests/00000000-0000-4000-8000-000000000000/events';
    for (const id of ['12345678901', '2147483648', 'abc', '-1', '1.5']) {
      const res = await t.client.request('GET', events, { headers: { 'last-event-id': id } });
      assert.equal(res.status, 400, `${JSON.stringify(id)}: ${res.text}`);
      assert.deepEqual(
        (res.body.details as { field: string }[]).map((d) => d.field),
        ['Last-Event-ID'],
      );
    }
    // In range, or empty (as some clients send it for none): on to the request, which is not there.
    for (const id of ['2147483647', '']) {
      const res = await t.client.request('GET', events, { headers: { 'last-event-id': id } });
      assert.equal(res.status, 404, `${JSON.stringify(id)}: ${res.text}`);
    }
  });

  it('a query parameter a route does not take is refused and named, as an unknown body field is', async () => {
    const conversation = await t.client.post('/v1/conversations', {});
    assert.equal(conversation.status, 201, conversation.text);
    for (const [client, path, fields] of [
      [t.client, '/v1/remote-agents?x=1', ['x']],
      [t.client, '/v1/mcp-servers?limit=abc&x=1', ['limit', 'x']],
      [t.client, '/v1/budgets?x=1', ['x']],
      [t.client, `/v1/conversations/${conversation.body.id}/messages?limit=0&cursor=zz`, ['limit', 'cursor']],
      [server.admin, '/v1/admin/registries/a2a-agents?x=1', ['x']],
    ] as [HttpClient, string, string[]][]) {
      const res = await client.get(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.deepEqual(
        (res.body.details as { field: string }[]).map((d) => d.field),
        fields,
        path,
      );
    }
    // A route with a query takes its own, and the A2A version goes anywhere.
    assert.equal((await t.client.get('/v1/agents?limit=2')).status, 200);
    assert.equal((await t.client.get('/v1/remote-agents?A2A-Version=1.0')).status, 200);
    // Discovery documents and probes take any query (caches, proxies and scrapers add their own).
    assert.equal((await t.client.get('/v1/health?probe=1')).status, 200);
    assert.equal((await fetch(`${server.url}/.well-known/agent-card.json?v=2`)).status, 200);
  });

  it('__proto__ and constructor keys are unknown fields, and change nothing', async () => {
    for (const raw of ['{"id":"p1","__proto__":{"role":"x"}}', '{"id":"p2","constructor":{"role":"x"}}']) {
      const res = await t.client.request('POST', '/v1/agents', {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, raw);
    }
    assert.equal((await t.client.post('/v1/agents', { id: 'proto-target', role: 'kept' })).status, 201);
    const before = (await t.client.get('/v1/agents/proto-target')).body;
    const patch = await t.client.request('PATCH', '/v1/agents/proto-target', {
      raw: '{"__proto__":{"role":"x"}}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(patch.status, 400);
    assert.deepEqual((await t.client.get('/v1/agents/proto-target')).body, before);
    const tenantPatch = await server.admin.request('PATCH', `/v1/admin/tenants/${t.id}`, {
      raw: '{"disabled":false,"constructor":1}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(tenantPatch.status, 400);
  });

  it('a reserved key deeper in a body, or null for a field that may only be left out, is a 400 naming it; nothing is stored', async () => {
    const cases: [typeof t.client, string, string, string][] = [
      [t.client, '/v1/orchestrate', '{"message":"x","agent_def":{"constructor":1}}', 'agent_def.constructor'],
      [
        t.client,
        '/v1/mcp-servers',
        '{"name":"mz","url":"https://mcp.invalid/x","headers":{"constructor":"x"}}',
        'headers.constructor',
      ],
      [
        t.client,
        '/v1/remote-agents',
        '{"name":"rz","url":"https://remote.invalid/","auth":{"type":"bearer","token":"t","constructor":1}}',
        'auth.constructor',
      ],
      [
        server.admin,
        '/v1/admin/issuers',
        '{"issuer":"https://idp.invalid","audiences":["arbiter"],"tenant_claim":"org","scope_map":{"constructor":["a2a:invoke"]}}',
        'scope_map.constructor',
      ],
      [server.admin, '/v1/admin/tenants', '{"name":"nulled","scopes":null}', 'scopes'],
      [server.admin, `/v1/admin/tenants/${t.id}/tokens`, '{"scopes":null}', 'scopes'],
      [t.client, '/v1/conversations', '{"agent":null}', 'agent'],
      [t.client, '/v1/conversations', '{"title":null}', 'title'],
    ];
    const counts = async () => ({
      tenants: (await server.admin.get('/v1/admin/tenants')).body.items.length,
      conversations: (await t.client.get('/v1/conversations')).body.items.length,
      remotes: (await t.client.get('/v1/remote-agents')).body.items.length,
      mcp: (await t.client.get('/v1/mcp-servers')).body.items.length,
    });
    const before = await counts();
    for (const [client, path, raw, field] of cases) {
      const res = await client.request('POST', path, { raw, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 400, `${path} ${raw}: ${res.text}`);
      assert.ok(
        (res.body.details as { field: string }[]).some((d) => d.field === field),
        `${path} names ${field}: ${res.text}`,
      );
    }
    assert.deepEqual(await counts(), before);
  });

  it('crafted cursors and times out of range → 400, never a failed query', async () => {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const cases: [string, string][] = [
      ['/v1/admin/tenants', enc({ createdAt: 'garbage', id: '00000000-0000-4000-8000-000000000000' })],
      ['/v1/admin/tenants', enc({ createdAt: '2026-01-01T00:00:00.000Z', id: 'nope' })],
      ['/v1/admin/audit', enc({ id: '9999999999999999999' })],
      ['/v1/admin/audit', enc({ id: '-1' })],
      ['/v1/agents', enc({ after: 'a\u0000b' })],
      ['/v1/requests', enc({ u: 'x', t: 'y' })],
      // The shape of a time, but no time the server wrote: a day that does not exist, year 0000, fields out of range.
      ['/v1/requests', enc({ u: '2026-02-30T00:00:00.000Z', t: 'y' })],
      ['/v1/requests', enc({ u: '0000-12-31T00:00:00.000Z', t: 'y' })],
      ['/v1/conversations', enc({ u: '2026-13-45T99:99:99.000Z', i: '00000000-0000-4000-8000-000000000000' })],
      ['/v1/admin/tenants', enc({ createdAt: '2026-02-30T00:00:00.000Z', id: '00000000-0000-4000-8000-000000000000' })],
    ];
    for (const [path, cursor] of cases) {
      const client = path.startsWith('/v1/admin') ? server.admin : t.client;
      const res = await client.get(`${path}?cursor=${cursor}`);
      assert.equal(res.status, 400, `${path} ${Buffer.from(cursor, 'base64url').toString()}`);
    }
    // A usage period that ends in the year 10000 once rounded up to the hour.
    for (const [client, path] of [
      [t.client, '/v1/usage?to=9999-12-31T23:59:59Z'],
      [server.admin, '/v1/admin/usage?to=9999-12-31T23:59:59-14:00'],
    ] as const) {
      const res = await client.get(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.match(res.text, /to must be within the years 0001 to 9999/);
    }
    // Blamed on the field given: a `to` whose default `from` (30 days before) is before year 0001.
    const early = await t.client.get('/v1/usage?to=0001-01-05T00:00:00Z');
    assert.equal(early.status, 400, early.text);
    assert.deepEqual(
      (early.body.details as { field: string }[]).map((d) => d.field),
      ['to'],
    );
    // ISO 8601 forms no date reader takes (a week, an ordinal day): named as such, not as out of range.
    for (const q of ['from=2025-W01', 'to=2025-032']) {
      const res = await t.client.get(`/v1/usage?${q}`);
      assert.equal(res.status, 400, `${q}: ${res.text}`);
      assert.match(res.text, /must be (a date or time such as 2025-06-01|an ISO 8601 date or time)/, q);
    }
  });

  it('oversize body → clean 413, nothing stored', async () => {
    const res = await t.client.post('/v1/agents', { id: 'big', goal: 'x'.repeat(4000) });
    assert.equal(res.status, 413);
    assert.equal(res.body.code, 'payload_too_large');
    assert.equal((await t.client.get('/v1/agents/big')).status, 404);
  });

  it('a body that passes the limit as it streams is answered 413 at once and its connection closed, the rest unread', async () => {
    const url = new URL('/v1/agents', server.url);
    const req = request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }, // chunked: no length
    });
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      req.once('response', resolve);
      req.once('error', reject);
    });
    // Up to 64 MiB (the limit here is 2 KiB), written as fast as the server reads, and never ended: a server that
    // read it all before answering would answer only once it ended.
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    let response: IncomingMessage | undefined;
    void answered.then(
      (r) => (response = r),
      () => undefined,
    );
    while (!response && sent < 64 * 1024 * 1024 && !req.destroyed) {
      sent += chunk.length;
      if (!req.write(chunk)) {
        // A server that stops reading without answering fails the test here rather than hangs it.
        const moved = new Promise<void>((resolve) => {
          const done = (): void => {
            req.off('drain', done).off('close', done);
            resolve();
          };
          req.once('drain', done).once('close', done);
        });
        await within(moved, 'the body to be read or refused');
      }
    }
    const res = await within(answered, 'an answer to the body');
    assert.equal(res.statusCode, 413);
    assert.equal(res.headers.connection, 'close');
    assert.ok(sent < 64 * 1024 * 1024, `the server read ${sent} bytes before answering`);
    res.resume();
    req.destroy();
  });

  it('a body of blanks alone is no JSON: 400', async () => {
    const res = await t.client.request('POST', '/v1/agents', {
      raw: '   \n ',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'invalid_json');
  });

  it('a non-JSON body → 415', async () => {
    const res = await t.client.request('POST', '/v1/agents', {
      raw: 'id=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(res.status, 415);
    assert.equal(res.body.code, 'unsupported_media_type');
  });

  it('unknown route → 404 JSON', async () => {
    const res = await t.client.get('/v1/nothing-here');
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'not_found');
  });

  it('echoes a well-formed X-Request-Id and replaces a malformed one', async () => {
    const good = await server.http.get('/v1/health', { 'x-request-id': 'trace-123.abc' });
    assert.equal(good.headers.get('x-request-id'), 'trace-123.abc');
    const bad = await server.http.get('/v1/health', { 'x-request-id': 'bad id with spaces' });
    assert.match(bad.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('no CORS by default (a gateway sits in front); security headers on every answer', async () => {
    const res = await server.http.request('OPTIONS', '/v1/agents', {
      headers: {
        origin: 'https://example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'a2a-version,authorization',
      },
    });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('access-control-allow-headers'), null);
    const health = await server.http.get('/v1/health');
    assert.equal(health.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(health.headers.get('x-frame-options'), 'DENY');
    assert.equal(health.headers.get('content-security-policy'), "default-src 'none';frame-ancestors 'none'");
    assert.equal(health.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(health.headers.get('x-powered-by'), null);
  });

  it('ARBITER_CORS_ORIGINS: the listed origins get CORS (preflight allows A2A-Version), others do not', async () => {
    const cors = await startTestServer({
      env: { ARBITER_CORS_ORIGINS: 'https://console.example.com,http://localhost:5173' },
    });
    try {
      const preflight = (origin: string) =>
        cors.http.request('OPTIONS', '/v1/agents', {
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'a2a-version,authorization',
          },
        });
      const ok = await preflight('https://console.example.com');
      assert.ok(ok.status === 204 || ok.status === 200, String(ok.status));
      assert.equal(ok.headers.get('access-control-allow-origin'), 'https://console.example.com');
      assert.match(ok.headers.get('access-control-allow-headers') ?? '', /A2A-Version/i);
      const other = await preflight('https://evil.example.net');
      assert.equal(other.headers.get('access-control-allow-origin'), null);
    } finally {
      await cors.close();
    }
  });
});
