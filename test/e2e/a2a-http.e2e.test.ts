// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { REST_ROUTE_PATHS } from '../../src/a2a-inbound/rest/rest-routes.js';
import { a2aTarget, splitTarget } from '../../src/a2a-inbound/http/a2a-target.js';
import { BodyAborted, readBody } from '../../src/common/http/read-body.js';
import { connect } from 'node:net';
import { createServer, type IncomingMessage } from 'node:http';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The A2A HTTP controller (`A2aHttpController`, src/a2a-inbound/http/): the
 * JSON-RPC endpoint and the HTTP+JSON binding are served ahead of Express and
 * Nest. What the application's pipeline gave every route must hold here too:
 * the bearer first, security headers and a request id on every answer, CORS
 * when configured, the body's limits, media types and encodings, one log line
 * and the metrics.
 */
describe('the A2A HTTP controller', () => {
  let server: TestServer;
  let t: TestTenant;
  const V1 = { 'a2a-version': '1.0' };
  const send = (text: string) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'SendMessage',
      params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } },
    });
  const restSend = (text: string) =>
    JSON.stringify({ message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text }] } });

  before(async () => {
    server = await startTestServer({
      env: {
        ARBITER_MAX_BODY_BYTES: '4096',
        // The A2A body limit is this plus the files' allowance (base64): 8,096 bytes here.
        ARBITER_MAX_MESSAGE_FILE_BYTES: '3000',
        ARBITER_MAX_FILE_BYTES: '3000',
        ARBITER_CORS_ORIGINS: 'https://console.example.com',
      },
    });
    t = await newTenant(server);
  });
  after(async () => {
    await server.close();
  });

  const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1, ...headers },
      body,
    });

  it('routes by path like Express did: the prefix in any case, a trailing slash, the card paths left to Nest', () => {
    assert.deepEqual(a2aTarget('/v1/a2a/agents/index'), { kind: 'jsonrpc', agent: 'index' });
    assert.deepEqual(a2aTarget('/V1/A2A/Agents/index/'), { kind: 'jsonrpc', agent: 'index' });
    assert.deepEqual(a2aTarget('/v1/a2a/agents/index/tasks/a%2Fb'), {
      kind: 'rest',
      agent: 'index',
      sub: 'tasks/a%2Fb',
    });
    for (const card of [
      'agent-card.json',
      '.well-known/agent-card.json',
      '.well-known/AGENT.json',
      'agent-card.json/',
    ]) {
      assert.equal(a2aTarget(`/v1/a2a/agents/index/${card}`), undefined, card);
      assert.equal(a2aTarget(`/v1/a2a/agents/index/${card}`, 'HEAD'), undefined, card);
    }
    // Only GET and HEAD are the card's: another method there is an HTTP+JSON request (authenticated, then 404).
    assert.deepEqual(a2aTarget('/v1/a2a/agents/index/agent-card.json', 'POST'), {
      kind: 'rest',
      agent: 'index',
      sub: 'agent-card.json',
    });
    // An absolute-form target (RFC 9112 §3.2.2) by its path; a fragment a client sent is dropped.
    assert.deepEqual(splitTarget('http://127.0.0.1:8080/v1/a2a/agents/index?A2A-Version=1.0'), {
      path: '/v1/a2a/agents/index',
      search: 'A2A-Version=1.0',
    });
    assert.deepEqual(splitTarget('/v1/a2a/agents/index/agent-card.json#x'), {
      path: '/v1/a2a/agents/index/agent-card.json',
      search: '',
    });
    for (const other of ['/v1/a2a/agents/', '/v1/a2a/agents', '/v1/a2a/agents//x', '/v1/agents/index', '/']) {
      assert.equal(a2aTarget(other), undefined, other);
    }
  });

  it('security headers, the request id and CORS on every answer, refusals included', async () => {
    const origin = { origin: 'https://console.example.com' };
    const ok = await post('/v1/a2a/agents/index', send('hello'), { ...origin, 'x-request-id': 'http-req-1' });
    assert.equal(ok.status, 200);
    const refused = await fetch(`${server.url}/v1/a2a/agents/index/tasks`, { headers: { ...origin, ...V1 } });
    assert.equal(refused.status, 401);
    for (const res of [ok, refused]) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(res.headers.get('cross-origin-resource-policy'), 'same-origin');
      assert.equal(res.headers.get('content-security-policy'), "default-src 'none';frame-ancestors 'none'");
      // Only a page a browser renders has a use for these: a JSON answer goes without them.
      for (const page of ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-xss-protection']) {
        assert.equal(res.headers.get(page), null, page);
      }
      assert.equal(res.headers.get('access-control-allow-origin'), 'https://console.example.com');
      assert.match(res.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/);
      assert.ok(res.headers.get('x-request-id'));
      assert.equal(res.headers.get('x-powered-by'), null);
    }
    assert.equal(ok.headers.get('x-request-id'), 'http-req-1');
    assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer/);
    // A preflight on an A2A route is answered by the CORS rules, without a token.
    const preflight = await fetch(`${server.url}/v1/a2a/agents/index`, {
      method: 'OPTIONS',
      headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'a2a-version' },
    });
    assert.ok(preflight.status === 204 || preflight.status === 200, String(preflight.status));
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /A2A-Version/i);
    // … with the headers of every answer.
    assert.equal(preflight.headers.get('x-content-type-options'), 'nosniff');
    assert.match(preflight.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.ok(preflight.headers.get('x-request-id'));
    const stranger = await post('/v1/a2a/agents/index', send('x'), { origin: 'https://evil.example.net' });
    assert.equal(stranger.headers.get('access-control-allow-origin'), null);
  });

  it('each header once, with CORS and without, in every answer shape (JSON, SSE, 401)', async () => {
    const raw = (base: string, path: string, body: string, headers: Record<string, string>) =>
      new Promise<string[]>((resolve, reject) => {
        const u = new URL(base);
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            path,
            method: 'POST',
            headers: { 'content-type': 'application/json', ...V1, ...headers },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase())));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const stream = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    });
    // This file's server has CORS on; answers without it are written another way by Node: check both.
    const plain = await startTestServer({ env: { ARBITER_TRUST_PROXY: 'true' } });
    try {
      const plainTenant = await newTenant(plain);
      // Behind a trusted proxy the card's URLs take its X-Forwarded-Proto — only http or https.
      const card = (proto: string) =>
        fetch(`${plain.url}/v1/a2a/agents/index/extendedAgentCard`, {
          headers: { ...V1, authorization: `Bearer ${plainTenant.token}`, 'x-forwarded-proto': proto },
        }).then((r) => r.json() as Promise<{ supportedInterfaces: { url: string }[] }>);
      assert.match((await card('https')).supportedInterfaces[0].url, /^https:\/\//);
      assert.match((await card('evil://attacker.example/#')).supportedInterfaces[0].url, /^http:\/\/127\.0\.0\.1/);
      for (const [base, token, extra] of [
        [server.url, t.token, { origin: 'https://console.example.com' }],
        [plain.url, plainTenant.token, {}],
      ] as [string, string, Record<string, string>][]) {
        const auth = { authorization: `Bearer ${token}`, ...extra };
        for (const names of [
          await raw(base, '/v1/a2a/agents/index', send('once'), auth),
          await raw(base, '/v1/a2a/agents/index', stream, auth),
          await raw(base, '/v1/a2a/agents/index/message:send', restSend('once'), auth),
          await raw(base, '/v1/a2a/agents/index', send('no token'), extra),
        ]) {
          const twice = names.filter((n, i) => names.indexOf(n) !== i);
          assert.deepEqual(twice, [], `headers sent twice: ${twice.join(', ')}`);
          assert.ok(names.includes('x-request-id'));
        }
      }
    } finally {
      await plain.close();
    }
  });

  it('every A2A route and method refuses a request without a valid token, in its binding’s shape', async () => {
    const jsonRpc = [
      ['POST', '/v1/a2a/agents/index'],
      ['GET', '/v1/a2a/agents/index'],
    ];
    const rest = REST_ROUTE_PATHS.map((r) => [
      r.method,
      `/v1/a2a/agents/index/${r.path.replace('{taskId}', 't1').replace('{configId}', 'c1')}`,
    ]);
    for (const token of [undefined, `atr_${'0'.repeat(64)}`]) {
      for (const [method, path] of [...jsonRpc, ...rest] as [string, string][]) {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { ...V1, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        });
        assert.equal(res.status, 401, `${method} ${path}`);
        const body = (await res.json()) as { code?: string; error?: { status?: string } };
        if (jsonRpc.some(([, p]) => p === path)) assert.equal(body.code, 'unauthorized', `${method} ${path}`);
        else assert.equal(body.error?.status, 'UNAUTHENTICATED', `${method} ${path}`);
      }
    }
    // The admin token is valid, but not here: 403 that says so.
    const admin = await fetch(`${server.url}/v1/a2a/agents/index/tasks`, {
      headers: { ...V1, authorization: `Bearer ${server.adminToken}` },
    });
    assert.equal(admin.status, 403);
  });

  it('compressed bodies are read (gzip, deflate, br); another encoding is a 415; the limit applies to the inflated size', async () => {
    for (const [encoding, pack] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const) {
      const rpc = await post('/v1/a2a/agents/index', pack(Buffer.from(send(`packed ${encoding}`))), {
        'content-encoding': encoding,
      });
      assert.equal(rpc.status, 200, encoding);
      const reply = (await rpc.json()) as { result?: { task?: { status: { state: string } } } };
      assert.equal(reply.result?.task?.status.state, 'TASK_STATE_COMPLETED', encoding);
      const rest = await post('/v1/a2a/agents/index/message:send', pack(Buffer.from(restSend('rest'))), {
        'content-encoding': encoding,
      });
      assert.equal(rest.status, 200, encoding);
    }
    const unknown = await post('/v1/a2a/agents/index', send('x'), { 'content-encoding': 'zstd-of-the-future' });
    assert.equal(unknown.status, 415);
    assert.equal(((await unknown.json()) as { code: string }).code, 'unsupported_media_type');
    // A small compressed body that inflates past the limit (4096 bytes besides files, here 70,000).
    const bomb = gzipSync(Buffer.from(send('a'.repeat(70_000))));
    assert.ok(bomb.length < 4096);
    const big = await post('/v1/a2a/agents/index', bomb, { 'content-encoding': 'gzip' });
    assert.equal(big.status, 413);
    const corrupt = await post('/v1/a2a/agents/index/message:send', Buffer.from('not gzip at all'), {
      'content-encoding': 'gzip',
    });
    assert.equal(corrupt.status, 400);
    assert.equal(((await corrupt.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
  });

  it('an empty Content-Encoding is none; encoded bytes are bounded even when they inflate to little', async () => {
    const empty = await post('/v1/a2a/agents/index', send('plain'), { 'content-encoding': ' ' });
    assert.equal(empty.status, 200);
    // 20,000 empty gzip members: about 400 KB that inflate to nothing, against an 8,096-byte limit.
    const nothing = gzipSync(Buffer.alloc(0));
    const padded = Buffer.concat([gzipSync(Buffer.from(send('x'))), ...Array.from({ length: 20_000 }, () => nothing)]);
    const res = await post('/v1/a2a/agents/index', padded, { 'content-encoding': 'gzip' });
    assert.equal(res.status, 413);
  });

  it('Expect: 100-continue — the bearer first: no invitation to a refused client, an invitation after the bearer', async () => {
    const exchange = (token: string | undefined) =>
      new Promise<string>((resolve, reject) => {
        const u = new URL(server.url);
        const body = send('continued');
        const sock = connect(Number(u.port), u.hostname, () => {
          sock.write(
            `POST /v1/a2a/agents/index HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
              `A2A-Version: 1.0\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}` +
              `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
          );
        });
        let text = '';
        let sent = false;
        sock.setEncoding('utf8');
        sock.on('data', (d: string) => {
          text += d;
          if (!sent && text.startsWith('HTTP/1.1 100') && text.includes('\r\n\r\n')) {
            sent = true;
            sock.write(body);
          }
        });
        sock.on('end', () => resolve(text));
        sock.on('error', reject);
      });
    const refused = await exchange(undefined);
    assert.match(refused, /^HTTP\/1\.1 401/);
    assert.doesNotMatch(refused, /100 Continue/);
    const invited = await exchange(t.token);
    assert.match(invited, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200/);
    assert.match(invited, /TASK_STATE_COMPLETED/);
  });

  it('a body whose client left before it was read is given up at once, never waited for', async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const gone = new Promise<IncomingMessage>((resolve) => srv.once('request', (req) => resolve(req)));
      const sock = connect((srv.address() as { port: number }).port, '127.0.0.1', () =>
        sock.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":'),
      );
      const req = await gone;
      sock.destroy();
      await new Promise((r) => req.once('close', r));
      await assert.rejects(readBody(req, 1000), BodyAborted);
    } finally {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    }
  });

  it('a body over the declared limit is refused before it is read, and the connection closed', async () => {
    const status = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const u = new URL(server.url);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: '/v1/a2a/agents/index',
          method: 'POST',
          headers: {
            authorization: `Bearer ${t.token}`,
            'content-type': 'application/json',
            'content-length': String(50_000_000),
            ...V1,
          },
        },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
        },
      );
      req.on('error', reject);
      req.write('{"jsonrpc":'); // and never the rest
    });
    assert.equal(status.status, 413);
    assert.equal(status.connection, 'close');
  });

  it('a client that goes away mid-body leaves the server serving', async () => {
    await new Promise<void>((resolve) => {
      const u = new URL(server.url);
      const req = request({
        host: u.hostname,
        port: u.port,
        path: '/v1/a2a/agents/index',
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', 'content-length': '1000' },
      });
      req.on('error', () => resolve());
      req.write('{"jsonrpc":"2.0",');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100);
    });
    const res = await post('/v1/a2a/agents/index', send('still here'));
    assert.equal(res.status, 200);
  });

  it('the metrics count A2A calls by route template, binding and method', async () => {
    await post('/v1/a2a/agents/index/message:send', restSend('counted'));
    const metrics = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminToken}` } });
    const text = await metrics.text();
    assert.match(text, /arbiter_http_requests_total\{method="POST",route="\/v1\/a2a\/agents\/:id",status="200"\} \d+/);
    assert.match(
      text,
      /arbiter_http_requests_total\{method="POST",route="\/v1\/a2a\/agents\/:id\/\*path",status="200"\} \d+/,
    );
    assert.match(
      text,
      /arbiter_a2a_requests_total\{binding="jsonrpc",method="SendMessage",dialect="1.0",error=""\} \d+/,
    );
    assert.match(text, /arbiter_a2a_requests_total\{binding="rest",method="SendMessage",dialect="1.0",error=""\} \d+/);
  });
});
