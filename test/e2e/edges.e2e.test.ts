import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { TaskState, type Task } from '@a2a-js/sdk';
import { authFetch, rpc, textMessage, v03Client, v1Client } from '../helpers/a2a.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const V1 = { 'a2a-version': '1.0' };
type RpcReply = { id: unknown; result?: any; error?: { code: number; message: string; data?: any } };

/** Sends raw bytes on a fresh connection; resolves with what the server answered before it closed. */
function rawExchange(port: number, bytes: string | Buffer, opts: { keepOpenMs?: number } = {}): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (d) => (got += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(got));
    socket.write(bytes);
    if (opts.keepOpenMs) setTimeout(() => socket.destroy(), opts.keepOpenMs).unref();
  });
}

/**
 * The edges of the HTTP and JSON-RPC surface: strict where the spec is
 * strict, forgiving where real clients differ (issue 11, "Requests in" and
 * "Replies out").
 */
describe('edges: requests in, replies out', () => {
  let server: TestServer;
  let t: TestTenant;
  let port: number;
  before(async () => {
    server = await startTestServer({
      env: { ARBITER_MAX_BODY_BYTES: String(4 * 1024 * 1024) },
    });
    t = await newTenant(server, 'edges');
    port = Number(new URL(server.url).port);
  });
  after(() => server.close());

  const call = async (body: unknown, headers: Record<string, string> = V1): Promise<RpcReply> => {
    const res = await rpc(server.url, t.token, 'index', body, headers);
    assert.equal(res.status, 200);
    return (await res.json()) as RpcReply;
  };
  const message = (parts: unknown[] = [{ text: 'hi' }]) => ({
    messageId: crypto.randomUUID(),
    role: 'ROLE_USER',
    parts,
  });

  describe('authentication (RFC 9110 §11)', () => {
    it('the scheme is case-insensitive, followed by any run of spaces or tabs', async () => {
      for (const header of [
        `bearer ${t.token}`,
        `BEARER ${t.token}`,
        `Bearer  ${t.token}`,
        `Bearer\t${t.token}`,
        `bEaReR \t ${t.token} `,
      ]) {
        const res = await fetch(`${server.url}/v1/agents`, { headers: { authorization: header } });
        assert.equal(res.status, 200, JSON.stringify(header));
      }
      for (const header of [`Bearer${t.token}`, `Basic ${t.token}`, `Bearer ${t.token} extra`]) {
        const res = await fetch(`${server.url}/v1/agents`, { headers: { authorization: header } });
        assert.equal(res.status, 401, JSON.stringify(header));
      }
    });

    it('the bearer is checked before the body is read: 2 MB without a token is a 401, not a 413', async () => {
      const big = 'x'.repeat(2 * 1024 * 1024);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v1/agents',
            headers: { 'content-type': 'application/json', 'content-length': big.length },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', (err) => (req.writableEnded ? undefined : reject(err)));
        req.end(big);
      });
      assert.equal(status, 401);
    });

    it('a stream asked for with Connection: close says so, and the connection closes when the stream ends', async () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: { message: message() },
      });
      const got = await rawExchange(
        port,
        `POST /v1/a2a/agents/index HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token}\r\nA2A-Version: 1.0\r\n` +
          `Content-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      assert.match(got, /^HTTP\/1\.1 200 /);
      assert.match(got, /\r\nconnection: close\r\n/i);
      assert.doesNotMatch(got, /keep-alive\r\n/i);
      assert.match(got, /TASK_STATE_COMPLETED/);
    });

    it('a body announced but withheld gets its 401 at once, and the connection is closed', async () => {
      const got = await rawExchange(
        port,
        `POST /v1/a2a/agents/index HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`,
      );
      assert.match(got, /^HTTP\/1\.1 401 /);
      assert.match(got, /connection: close/i);
    });

    it('slow clients end: dribbled headers (ARBITER_HEADERS_TIMEOUT_MS) and a withheld body (ARBITER_REQUEST_TIMEOUT_MS)', async () => {
      // A server of its own with short timeouts: every other request here may take as long as a loaded machine needs.
      const strict = await startTestServer({
        env: { ARBITER_HEADERS_TIMEOUT_MS: '1000', ARBITER_REQUEST_TIMEOUT_MS: '2000' },
      });
      after(() => strict.close());
      const port = Number(new URL(strict.url).port);
      const token = (await newTenant(strict, 'slow-clients')).token;
      const dribblers: Promise<string>[] = [];
      const sockets: Socket[] = [];
      for (let i = 0; i < 20; i++) {
        dribblers.push(
          new Promise((resolve) => {
            const s = connect(port, '127.0.0.1');
            sockets.push(s);
            let got = '';
            s.on('data', (d) => (got += d.toString()));
            s.on('error', () => undefined);
            s.on('close', () => resolve(got));
            s.write('GET /v1/health HTTP/1.1\r\nX-Slow: ');
            const timer = setInterval(() => s.writable && s.write('a'), 300);
            s.on('close', () => clearInterval(timer));
          }),
        );
      }
      const authed = rawExchange(
        port,
        `POST /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":`,
      );
      // The server closes them all (Node's default would keep them for minutes); a deadline keeps a broken test finite.
      const deadline = setTimeout(() => sockets.forEach((s) => s.destroy()), PATIENCE_MS);
      const answers = await Promise.all(dribblers);
      const authedAnswer = await authed;
      clearTimeout(deadline);
      for (const a of answers) assert.match(a, /^HTTP\/1\.1 408 /, 'closed by the server with 408');
      assert.match(authedAnswer, /^HTTP\/1\.1 408 /);
    });
  });

  describe('JSON-RPC envelope and params', () => {
    const base = { jsonrpc: '2.0', id: 9 };

    it('params that is not an object or array → -32600; an array → -32602', async () => {
      for (const params of ['x', 3, true]) {
        assert.equal((await call({ ...base, method: 'GetTask', params })).error?.code, -32600, JSON.stringify(params));
      }
      assert.equal((await call({ ...base, method: 'GetTask', params: ['t'] })).error?.code, -32602);
    });

    it('a method name with NUL → -32601', async () => {
      const r = await call({ ...base, method: 'GetTask\u0000', params: { id: 'x' } });
      assert.equal(r.error?.code, -32601);
    });

    it('a message with 50,000 metadata keys is stored and read back whole, its history cut or not', async () => {
      const metadata = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
      const sent = { ...message([{ text: 'many keys', metadata: { part: 'x' } }]), metadata };
      const created = await call({ ...base, method: 'SendMessage', params: { message: sent } });
      const id = created.result?.task?.id as string;
      assert.ok(id, JSON.stringify(created).slice(0, 300));
      for (const historyLength of [undefined, 1, 2]) {
        const got = (await call({ ...base, method: 'GetTask', params: { id, historyLength } })).result;
        const mine = got.history.find((m: { messageId: string }) => m.messageId === sent.messageId);
        if (historyLength === 1) {
          assert.equal(got.history.length, 1);
          assert.equal(mine, undefined, 'the last message is the reply');
          continue;
        }
        assert.deepEqual(mine.metadata, metadata, `historyLength ${historyLength}`);
        assert.deepEqual(mine.parts[0].metadata, { part: 'x' });
      }
    });

    it('1000-deep metadata → -32602 naming the field; a 1000-deep id → -32600', async () => {
      let deep: unknown = 'bottom';
      for (let i = 0; i < 1000; i++) deep = { d: deep };
      const r = await call({ ...base, method: 'SendMessage', params: { message: { ...message(), metadata: deep } } });
      assert.equal(r.error?.code, -32602);
      assert.match(r.error.message, /params\.message\.metadata/);
      const byId = await call({ jsonrpc: '2.0', id: deep, method: 'GetTask', params: { id: 'x' } });
      assert.equal(byId.error?.code, -32600);
      assert.equal(byId.id, null);
    });

    it('statusTimestampAfter must be RFC 3339 with an offset, years 0001–9999 → else -32602, never -32603', async () => {
      for (const ts of [
        '0000-01-01T00:00:00Z',
        '',
        '2026-01-01T00:00:00',
        '2026-02-30T00:00:00Z',
        '2026-01-01T25:00:00Z',
        'yesterday',
        5,
        // In range as written, out of it in UTC.
        '9999-12-31T23:59:59-14:00',
        '0001-01-01T00:00:00+14:00',
      ]) {
        const r = await call({ ...base, method: 'ListTasks', params: { statusTimestampAfter: ts } });
        assert.equal(r.error?.code, -32602, JSON.stringify(ts));
      }
      for (const ts of [
        '2026-01-01T00:00:00Z',
        '2026-01-01T00:00:00.123456+02:00',
        '0001-01-01T00:00:00Z',
        '9999-12-31T23:59:59Z',
      ]) {
        assert.ok((await call({ ...base, method: 'ListTasks', params: { statusTimestampAfter: ts } })).result, ts);
      }
    });

    it('v0.3: DataPart.data must be an object; historyLength must be a number (v1.0 also takes "3", as ProtoJSON does)', async () => {
      const v03 = (parts: unknown[]) => ({
        ...base,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts } },
      });
      for (const data of [[1, 2], 'text', 5]) {
        assert.equal((await call(v03([{ kind: 'data', data }]), {})).error?.code, -32602, JSON.stringify(data));
      }
      assert.ok((await call(v03([{ kind: 'data', data: { a: 1 } }]), {})).result);
      const task = (await call(v03([{ kind: 'text', text: 'x' }]), {})).result;
      assert.equal(
        (await call({ ...base, method: 'tasks/get', params: { id: task.id, historyLength: '3' } }, {})).error?.code,
        -32602,
      );
      assert.ok((await call({ ...base, method: 'GetTask', params: { id: task.id, historyLength: '3' } })).result);
    });

    it('v1.0: tenant must be a string', async () => {
      const r = await call({ ...base, method: 'GetTask', params: { id: 'x', tenant: 7 } });
      assert.equal(r.error?.code, -32602);
      assert.match(r.error.message, /params\.tenant/);
    });

    it('a raw file part that is not valid base64 → -32602 (whatever its media type), not -32005', async () => {
      for (const mediaType of ['text/plain', 'application/octet-stream']) {
        const r = await call({
          ...base,
          method: 'SendMessage',
          params: { message: message([{ raw: '%%%not base64', mediaType }]) },
        });
        assert.equal(r.error?.code, -32602, mediaType);
      }
    });
  });

  describe('Content-Type', () => {
    const send = (contentType: string | undefined) =>
      fetch(`${server.url}/v1/a2a/agents/index`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.token}`,
          'a2a-version': '1.0',
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        // Bytes, not a string: fetch would add text/plain itself.
        body: Buffer.from(
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message() } }),
        ),
      });

    it('JSON-RPC takes application/json, application/a2a+json and none', async () => {
      for (const type of ['application/json', 'application/json; charset=utf-8', 'application/a2a+json', undefined]) {
        const res = await send(type);
        assert.equal(res.status, 200, type);
        assert.ok(((await res.json()) as RpcReply).result, type);
      }
    });

    it('anything else is a 415 with a JSON body that says what to send (the request is not run)', async () => {
      for (const type of [
        'text/html',
        'text/plain',
        'multipart/form-data; boundary=x',
        'application/xml',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
      ]) {
        const res = await send(type);
        assert.equal(res.status, 415, type);
        const body = (await res.json()) as { code: string; error: string };
        assert.equal(body.code, 'unsupported_media_type', type);
        assert.match(body.error, /application\/json/);
      }
      // REST routes: the same status and code for a charset that is not UTF-8.
      const rest = await fetch(`${server.url}/v1/agents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json; charset=latin1' },
        body: JSON.stringify({ id: 'x' }),
      });
      assert.equal(rest.status, 415);
      assert.equal(((await rest.json()) as { code: string }).code, 'unsupported_media_type');
    });
  });

  it('acceptedOutputModes: text, wildcards and text/markdown are served; only modes nothing could match are refused', async () => {
    for (const modes of [['text'], ['*/*'], ['text/*'], ['text/markdown'], ['image/png', 'text']]) {
      const r = await call({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: message(), configuration: { acceptedOutputModes: modes } },
      });
      assert.ok(r.result, JSON.stringify(modes));
    }
    const r = await call({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: message(), configuration: { acceptedOutputModes: ['image/png'] } },
    });
    assert.equal(r.error?.code, -32005);
  });

  describe('JSON bodies that cannot be taken are refused before they are parsed, saying where', () => {
    const rest = (body: string) =>
      fetch(`${server.url}/v1/a2a/agents/index/message:send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1 },
        body,
      });

    it('8 MiB of "[": a depth error at line 1, column 65 on JSON-RPC, REST and the native API (a parse would say -32700)', async () => {
      const deep = '['.repeat(8 * 1024 * 1024);
      const r = (await (await rpc(server.url, t.token, 'index', deep, V1)).json()) as RpcReply;
      assert.equal(r.error?.code, -32600, JSON.stringify(r.error));
      assert.match(r.error.message, /nested deeper than 64 levels \(line 1, column 65\)/);
      const res = await rest(deep);
      assert.equal(res.status, 400);
      const status = (await res.json()) as { error: { status: string; message: string } };
      assert.equal(status.error.status, 'INVALID_ARGUMENT');
      assert.match(status.error.message, /nested deeper than 64 levels \(line 1, column 65\)/);
      const native = await t.client.request('POST', '/v1/agents', {
        raw: '['.repeat(3 * 1024 * 1024),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(native.status, 400);
      assert.equal(native.body.code, 'validation_failed');
      assert.match(native.body.error, /nested deeper than 64 levels \(line 1, column 65\)/);
    });

    it('a body that is more than the limit besides its file bytes is a 413 before parsing (unterminated, it would be -32700)', async () => {
      const filler = '[],'.repeat((5 * 1024 * 1024) / 3);
      const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"metadata":{"x":[${filler}`;
      const res = await rpc(server.url, t.token, 'index', body, V1);
      assert.equal(res.status, 413);
      assert.match(await res.text(), /exceeds 4194304 bytes besides its file bytes/);
      const viaRest = await rest(`{"message":{"metadata":{"x":[${filler}`);
      assert.equal(viaRest.status, 413);
    });

    it('a syntax error names its line and column, on every route, without quoting the body', async () => {
      const secret = 'sk-live-0123456789';
      const broken = `{\n  "note": "${secret}",\n  "role": }`;
      const r = (await (await rpc(server.url, t.token, 'index', broken, V1)).json()) as RpcReply;
      assert.equal(r.error?.code, -32700);
      assert.match(r.error.message, /value expected at line 3, column 11/);
      const res = await rest(broken);
      assert.equal(res.status, 400);
      const text = await res.text();
      assert.match(text, /value expected at line 3, column 11/);
      const native = await t.client.request('POST', '/v1/agents', {
        raw: broken,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(native.status, 400);
      assert.equal(native.body.code, 'invalid_json');
      assert.match(native.body.error, /value expected at line 3, column 11/);
      for (const answer of [JSON.stringify(r), text, native.text]) assert.ok(!answer.includes(secret), answer);
    });
  });

  it('validation errors stay small: 80,000 unknown keys list 20 problems and count the rest', async () => {
    const body: Record<string, number> = { id: 1 };
    for (let i = 0; i < 80_000; i++) body[`k${i}`] = 1;
    const res = await t.client.post('/v1/agents', body);
    assert.equal(res.status, 400);
    assert.ok(res.text.length < 10_000, `${res.text.length} bytes`);
    assert.equal(res.body.details.length, 20);
    assert.match(res.body.error, /80001 problems, the first 20 listed/);
  });

  describe('replies out', () => {
    it('§3.7 v1.0: the answer rides on the artifact, the completed status carries no copy; v0.3 keeps it on the status', async () => {
      const v1 = await v1Client(server.url, t.token);
      const task = (await v1.sendMessage(textMessage('the answer'))) as Task;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(task.status?.message, undefined, 'no copy on the status');
      assert.deepEqual(
        task.artifacts.map((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')),
        ['the answer'],
      );
      const legacy = await v03Client(server.url, t.token);
      const old = (await legacy.sendMessage(textMessage('the answer'))) as Task;
      const statusText = old.status?.message?.parts
        .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
        .join('');
      assert.equal(statusText, 'the answer');
    });

    it('the card is also found from the agent URL: <url>/.well-known/agent-card.json and <url>/.well-known/agent.json', async () => {
      const agentUrl = `${server.url}/v1/a2a/agents/index`;
      const canonical = await t.client.get('/v1/a2a/agents/index/agent-card.json', V1);
      for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
        const res = await t.client.get(`/v1/a2a/agents/index${path}`, V1);
        assert.equal(res.status, 200, path);
        assert.deepEqual(res.body, canonical.body, path);
        assert.equal(res.headers.get('etag'), canonical.headers.get('etag'));
        assert.equal((await server.http.get(`/v1/a2a/agents/index${path}`)).status, 401, 'the same auth');
        const cached = await t.client.get(`/v1/a2a/agents/index${path}`, {
          ...V1,
          'if-none-match': canonical.headers.get('etag')!,
        });
        assert.equal(cached.status, 304);
      }
      // The official SDK, the way its docs show: a client from the agent's URL.
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch(t.token) })],
          cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(t.token) }),
        }),
      );
      // (with the trailing slash, so that `new URL('.well-known/agent-card.json', base)` stays under the agent)
      const client = await factory.createFromUrl(`${agentUrl}/`);
      const task = (await client.sendMessage(textMessage('found it'))) as Task;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    });
  });
});
