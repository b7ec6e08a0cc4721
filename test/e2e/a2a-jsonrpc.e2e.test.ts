// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv } from 'ajv';
import { after, before, describe, it } from 'node:test';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { TaskState, type Task } from '@a2a-js/sdk';
import { followSse, readSse, rpc, textMessage, v03Client, waitFor } from '../helpers/a2a.js';
import { within } from '../helpers/patience.js';
import { EventBus } from '../../src/tasks/event-log/event-bus.js';

const V1 = { 'a2a-version': '1.0' };
const V03_SCHEMA = resolve('../shared/reference/a2a-v0.3-schema.json');

function send(method: string, text: string, extra: Record<string, unknown> = {}, id: unknown = 1) {
  const v03 = method.includes('/');
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      message: v03
        ? { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra }
        : { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
    },
  };
}

describe('JSON-RPC endpoint /v1/a2a/agents/:id (spec §9, seed 002)', () => {
  let server: TestServer;
  let t: TestTenant;
  let url: string;
  before(async () => {
    server = await startTestServer({
      env: { ARBITER_SSE_HEARTBEAT_MS: '150', ARBITER_MAX_TEXT_FILE_BYTES: '64', ARBITER_MAX_BODY_BYTES: '65536' },
    });
    t = await newTenant(server, 'rpc');
    await newAgent(t, { id: 'helper', role: 'helper' });
    url = server.url;
  });
  after(async () => {
    await server.close();
  });

  const call = async (body: unknown, headers: Record<string, string> = V1, agent = 'helper') => {
    const res = await rpc(url, t.token, agent, body, headers);
    assert.equal(res.status, 200);
    return (await res.json()) as { id: unknown; result?: any; error?: { code: number; message: string; data?: any } };
  };

  describe('HTTP layer', () => {
    it('401 before any JSON-RPC without a valid bearer', async () => {
      for (const token of [undefined, 'atr_' + '0'.repeat(64)]) {
        const res = await rpc(url, token, 'helper', '{not json');
        assert.equal(res.status, 401);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    });

    it('GET on the dispatch URL → 405; a bad URL shape → 404', async () => {
      const get = await fetch(`${url}/v1/a2a/agents/helper`, { headers: { authorization: `Bearer ${t.token}` } });
      assert.equal(get.status, 405);
      assert.equal(get.headers.get('allow'), 'POST');
      const bad = await fetch(`${url}/v1/a2a/foo`, { method: 'POST', headers: { authorization: `Bearer ${t.token}` } });
      assert.equal(bad.status, 404);
      const badId = await rpc(url, t.token, 'bad%20id!', send('SendMessage', 'x'));
      assert.equal(badId.status, 404);
    });

    it('a body over the limit is refused cleanly', async () => {
      const res = await rpc(url, t.token, 'helper', send('SendMessage', 'x'.repeat(70_000)), V1);
      assert.equal(res.status, 413);
    });
  });

  describe('version negotiation (§3.6)', () => {
    it('accepts 1.0, 1, 0.3, empty and absent', async () => {
      const headers: Record<string, string>[] = [
        { 'a2a-version': '1.0' },
        { 'a2a-version': '1' },
        { 'a2a-version': '0.3' },
        { 'a2a-version': '' },
        {},
      ];
      for (const h of headers) {
        // v0.3 method names are served under every accepted version (the seeds' clients send them under 1.0).
        const r = await call(send('message/send', 'v'), h);
        assert.equal(r.result?.kind, 'task', JSON.stringify(h));
      }
      for (const h of headers.slice(0, 2)) {
        const r = await call(send('SendMessage', 'v'), h);
        assert.ok(r.result?.task, JSON.stringify(h));
      }
      const q = await rpc(`${url}`, t.token, 'helper?A2A-Version=1.0', send('SendMessage', 'q'), {});
      assert.ok(((await q.json()) as { result?: { task?: unknown } }).result?.task, 'the query parameter is read');
    });

    it('§3.6.2: an absent, empty or 0.3 version is 0.3, so v1.0 method names are -32601 with a hint', async () => {
      for (const h of [{ 'a2a-version': '0.3' }, { 'a2a-version': '' }, {}] as Record<string, string>[]) {
        for (const method of ['SendMessage', 'GetTask']) {
          const r = await call(send(method, 'v'), h);
          assert.equal(r.error?.code, -32601, `${method} ${JSON.stringify(h)}`);
          assert.match(r.error.message, /send the header A2A-Version: 1\.0/);
        }
      }
    });

    it("anything else → VersionNotSupportedError -32009, with the request's id where it can be read", async () => {
      for (const v of ['2.0', '0.2', 'latest', '1.1']) {
        const r = await call(send('SendMessage', 'v', {}, 77), { 'a2a-version': v });
        assert.equal(r.error?.code, -32009, v);
        assert.equal(r.id, 77);
      }
      // Where it cannot (the body is no JSON-RPC request), null (JSON-RPC 2.0 §5).
      const unreadable = await call('{"id": 5, "method": ', { 'a2a-version': '2.0' });
      assert.equal(unreadable.error?.code, -32009);
      assert.equal(unreadable.id, null);
      const q = await rpc(url, t.token, 'helper?A2A-Version=9.9', send('SendMessage', 'q'), {});
      assert.equal(((await q.json()) as { error: { code: number } }).error.code, -32009);
    });
  });

  describe('error table', () => {
    it('-32700 parse error, id null', async () => {
      const r = await call('{"jsonrpc": "2.0", "id": 1, "method": ');
      assert.equal(r.error?.code, -32700);
      assert.equal(r.id, null);
    });

    it('-32700 for a body that is not UTF-8 (a Latin-1 é), on every A2A binding over HTTP and the native API; nothing stored', async () => {
      const latin1 = (json: string): Buffer => {
        const at = json.indexOf('café');
        return Buffer.concat([
          Buffer.from(json.slice(0, at + 3)),
          Buffer.from([0xe9]),
          Buffer.from(json.slice(at + 4)),
        ]);
      };
      const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'café' }] };
      const post = (path: string, body: unknown) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1 },
          body: latin1(JSON.stringify(body)),
        });
      const rpc = await post('/v1/a2a/agents/helper', {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message },
      });
      const refused = (await rpc.json()) as any;
      assert.equal(refused.error?.code, -32700, JSON.stringify(refused).slice(0, 400));
      assert.match(refused.error.message, /not valid UTF-8/);
      const rest = await post('/v1/a2a/agents/helper/message:send', { message });
      assert.equal(rest.status, 400);
      assert.match(JSON.stringify(await rest.json()), /not valid UTF-8/);
      const native = await post('/v1/agents', { id: 'café', role: 'x' });
      assert.equal(native.status, 400);
      assert.match(JSON.stringify(await native.json()), /not valid UTF-8/);
      const listed = await call({ jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { pageSize: 100 } });
      assert.ok(!JSON.stringify(listed.result).includes(message.messageId), 'no task was made');
    });

    it('-32600 invalid request', async () => {
      for (const body of [
        [],
        [send('SendMessage', 'x')],
        '"text"',
        { id: 1, method: 'SendMessage', params: {} },
        { jsonrpc: '1.0', id: 1, method: 'SendMessage', params: {} },
        { jsonrpc: '2.0', id: 1, params: {} },
        { jsonrpc: '2.0', id: { x: 1 }, method: 'GetTask', params: {} },
        { jsonrpc: '2.0', id: 1, method: 'GetTask', params: {}, extra: true },
      ]) {
        const r = await call(body);
        assert.equal(r.error?.code, -32600, JSON.stringify(body));
      }
    });

    it('-32601 method not found (also for prototype names)', async () => {
      for (const method of ['tasks/nope', 'toString', '__proto__', 'constructor', 'sendMessage']) {
        const r = await call({ jsonrpc: '2.0', id: 'm', method, params: {} });
        assert.equal(r.error?.code, -32601, method);
        assert.equal(r.id, 'm');
      }
    });

    it('-32602 invalid params, naming the field (v1.0: google.rpc.BadRequest)', async () => {
      const cases: [unknown, string][] = [
        [{ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: [] }, 'params'],
        [{ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }, 'params.message'],
        [send('SendMessage', 'x', { messageId: '' }), 'params.message.messageId'],
        [send('SendMessage', 'x', { role: 'ROLE_AGENT' }), 'params.message.role'],
        [send('SendMessage', 'x', { parts: [] }), 'params.message.parts'],
        [send('SendMessage', 'x', { parts: [{ text: 'a', data: {} }] }), 'params.message.parts[0]'],
        [send('SendMessage', 'x', { parts: [{ text: 5 }] }), 'params.message.parts[0].text'],
        [
          {
            ...send('SendMessage', 'x'),
            params: { ...send('SendMessage', 'x').params, configuration: { historyLength: -1 } },
          },
          'params.configuration.historyLength',
        ],
        [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 5 } }, 'params.id'],
        [{ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageSize: 0 } }, 'params.pageSize'],
        [{ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { status: 'DONE' } }, 'params.status'],
        [{ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageToken: 'garbage!' } }, 'params.pageToken'],
        [
          { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { statusTimestampAfter: 'yesterday' } },
          'params.statusTimestampAfter',
        ],
      ];
      for (const [body, field] of cases) {
        const r = await call(body);
        assert.equal(r.error?.code, -32602, `${field}: ${JSON.stringify(r)}`);
        const bad = (r.error?.data as any[]).find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
        assert.equal(bad?.fieldViolations?.[0]?.field, field);
      }
      const v03 = await call(send('message/send', 'x', { messageId: 7 }));
      assert.equal(v03.error?.code, -32602);
      assert.equal(v03.error?.data?.field, 'params.message.messageId');
    });

    it('v0.3 message/send and message/stream need kind on the message and its parts; the SDK v0.3 client sends it', async () => {
      for (const method of ['message/send', 'message/stream']) {
        const body = send(method, 'no kind');
        delete (body.params.message as Record<string, unknown>).kind;
        const r = await call(body, {});
        assert.equal(r.error?.code, -32602, `${method}: ${JSON.stringify(r)}`);
        assert.equal(r.error?.data?.field, 'params.message.kind');
        assert.match(r.error.message, /params\.message\.kind is required: "message"/);
        const wrong = await call(send(method, 'x', { kind: 'task' }), {});
        assert.equal(wrong.error?.data?.field, 'params.message.kind');
        const part = await call(send(method, 'x', { parts: [{ text: 'no part kind' }] }), {});
        assert.equal(part.error?.data?.field, 'params.message.parts[0].kind');
      }
      const sdk = await v03Client(url, t.token, 'helper');
      const task = (await sdk.sendMessage(textMessage('from the v0.3 SDK'))) as Task;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    });

    it('a refused role or part says what it got (a short enum name, or key names), never a long value', async () => {
      const role = await call(send('SendMessage', 'x', { role: 'UNRECOGNIZED' }));
      assert.equal(role.error?.code, -32602);
      assert.equal(role.error.message, 'invalid params: params.message.role must be ROLE_USER (got "UNRECOGNIZED")');
      const part = await call(send('SendMessage', 'x', { parts: [{ kind: 'text', foo: 'a private note' }] }));
      assert.equal(
        part.error?.message,
        'invalid params: params.message.parts[0] must have one of text, raw, url, data (got keys: kind, foo)',
      );
      const v03 = await call(send('message/send', 'x', { role: 'user-'.repeat(20) }), {});
      assert.equal(
        v03.error?.message,
        'invalid params: params.message.role must be "user" (got a string of 100 characters)',
      );
    });

    it('NUL characters and bad base64 are invalid params, never a 500', async () => {
      const nul = await call(send('SendMessage', 'a\u0000b'));
      assert.equal(nul.error?.code, -32602);
      assert.match(nul.error.message, /params\.message\.parts\[0\]\.text/);
      assert.equal(
        (await call({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x\u0000' } })).error?.code,
        -32602,
      );
      const bad = await call(send('SendMessage', 'x', { parts: [{ raw: 'a', mediaType: 'text/plain' }] }));
      assert.equal(bad.error?.code, -32602);
      // A "text" file holding a NUL byte is not shown to the model as text: it is stored as a file.
      const nulFile = await call(
        send('SendMessage', 'x', {
          parts: [{ raw: Buffer.from('a\u0000b').toString('base64'), mediaType: 'text/plain' }],
        }),
      );
      assert.equal(nulFile.result.task.artifacts[0].parts[0].text, '[file: unnamed, text/plain, 3 bytes]');
      assert.equal(
        (await call(send('SendMessage', 'x', { parts: [{ raw: 'AAAA', mediaType: 'not a type' }] }))).error?.code,
        -32602,
      );
      assert.equal(
        (await call(send('SendMessage', 'x', { parts: [{ url: 'file:///etc/passwd' }] }))).error?.code,
        -32602,
      );
      const surrogate = await rpc(
        url,
        t.token,
        'helper',
        '{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"\\ud800"}}',
        V1,
      );
      const s = (await surrogate.json()) as { id: unknown; error: { code: number } };
      assert.equal(s.id, 7);
      assert.equal(s.error.code, -32602);
      assert.equal((await call(send('SendMessage', 'x', { parts: [{ data: null }] }))).error?.code, -32602);
    });

    it('-32001 unknown task, and an unknown agent', async () => {
      assert.equal(
        (await call({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'nope' } })).error?.code,
        -32001,
      );
      assert.equal(
        (await call({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'nope' } })).error?.code,
        -32001,
      );
      assert.equal((await call(send('SendMessage', 'x'), V1, 'nobody')).error?.code, -32001);
    });

    it('push configs of an unknown task are -32001 (both dialects)', async () => {
      for (const [method, params] of [
        ['CreateTaskPushNotificationConfig', { taskId: 'x', url: 'http://192.0.2.1/hook' }],
        ['GetTaskPushNotificationConfig', { taskId: 'x', id: 'c' }],
        ['ListTaskPushNotificationConfigs', { taskId: 'x' }],
        ['DeleteTaskPushNotificationConfig', { taskId: 'x', id: 'c' }],
        ['tasks/pushNotificationConfig/set', { taskId: 'x', pushNotificationConfig: { url: 'http://192.0.2.1/hook' } }],
        ['tasks/pushNotificationConfig/get', { id: 'x' }],
        ['tasks/pushNotificationConfig/list', { id: 'x' }],
        ['tasks/pushNotificationConfig/delete', { id: 'x', pushNotificationConfigId: 'c' }],
      ] as const) {
        assert.equal((await call({ jsonrpc: '2.0', id: 1, method, params })).error?.code, -32001, method);
      }
      // A webhook the egress policy refuses refuses the message (no task is created).
      const withPush = send('SendMessage', 'x');
      (withPush.params as any).configuration = { taskPushNotificationConfig: { url: 'http://169.254.169.254/' } };
      assert.equal((await call(withPush)).error?.code, -32602);
    });

    it('files of any type, by bytes or URL, are accepted (the model sees a line for each); -32005 only for unmet output modes', async () => {
      const file = (mediaType: string, body: string) => ({
        raw: Buffer.from(body).toString('base64'),
        mediaType,
        filename: 'f',
      });
      const modes = send('SendMessage', 'x');
      (modes.params as any).configuration = { acceptedOutputModes: ['image/png'] };
      assert.equal((await call(modes)).error?.code, -32005);
      (modes.params as any).configuration = { acceptedOutputModes: ['image/png', 'text/plain'] };
      assert.ok((await call(modes)).result);

      const ok = await call(
        send('SendMessage', 'x', {
          parts: [
            { text: 'see:' },
            file('text/markdown', '# hi'),
            { data: { k: [1, 2] } },
            file('image/png', 'png'),
            { url: 'https://example.com/a.txt', mediaType: 'text/plain' },
            // Over ARBITER_MAX_TEXT_FILE_BYTES (64 here): stored and described, not inlined.
            file('text/plain', 'x'.repeat(65)),
          ],
        }),
      );
      const reply = ok.result.task.artifacts[0].parts[0].text as string;
      assert.equal(
        reply,
        [
          'see:',
          '[file f (text/markdown)]',
          '# hi',
          '{"k":[1,2]}',
          '[file: f, image/png, 3 bytes]',
          '[file: unnamed, text/plain, at https://example.com/a.txt (not fetched)]',
          '[file: f, text/plain, 65 bytes]',
        ].join('\n'),
      );
      const v03 = await call(
        send('message/send', 'x', {
          parts: [{ kind: 'file', file: { bytes: Buffer.from('q').toString('base64'), mimeType: 'application/pdf' } }],
        }),
      );
      assert.equal(v03.result.kind, 'task');
      assert.equal(v03.result.history[0].parts[0].file.bytes, Buffer.from('q').toString('base64'));
    });

    it('-32002 canceling a terminal task; -32004 sending to one', async () => {
      const done = await call(send('SendMessage', 'fin'));
      const id = done.result.task.id as string;
      assert.equal((await call({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id } })).error?.code, -32002);
      assert.equal((await call({ jsonrpc: '2.0', id: 1, method: 'tasks/cancel', params: { id } })).error?.code, -32002);
      assert.equal((await call(send('SendMessage', 'more', { taskId: id }))).error?.code, -32004);
      const v03 = await call(send('message/send', 'more', { taskId: id }));
      assert.equal(v03.error?.code, -32004);
      assert.match(v03.error.message, /terminal/);
    });
  });

  describe('ProtoJSON shapes (v1.0) and the seed shapes (v0.3)', () => {
    it('v1.0 task: TASK_STATE_*, ROLE_*, no kind, ISO timestamps with milliseconds', async () => {
      const r = await call(send('SendMessage', 'shape'));
      const task = r.result.task;
      assert.equal(task.kind, undefined);
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.match(task.status.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(task.history[0].role, 'ROLE_USER');
      assert.equal(task.history[1].role, 'ROLE_AGENT');
      assert.deepEqual(task.history[0].parts, [{ text: 'shape' }]);
    });

    it('v1.0 params in proto field names (message_id, history_length …) read as ProtoJSON does; both names of one field is -32602', async () => {
      const messageId = randomUUID();
      const snake = {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            message_id: messageId,
            role: 'ROLE_USER',
            parts: [{ data: { some_key: 1 }, media_type: 'application/json' }],
            metadata: { task_id: 'not a field here' },
          },
          configuration: { history_length: 1, return_immediately: false },
        },
      };
      const r = await call(snake);
      assert.equal(r.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(r));
      const id = r.result.task.id as string;
      assert.equal(r.result.task.history.length, 1);
      const got = await call({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id, history_length: 2 } });
      assert.equal(got.result.history.length, 2);
      assert.equal(got.result.history[0].messageId, messageId);
      assert.deepEqual(got.result.history[0].parts[0].data, { some_key: 1 });
      assert.equal(got.result.history[0].parts[0].mediaType, 'application/json');
      assert.deepEqual(got.result.history[0].metadata, { task_id: 'not a field here' });
      const twice = await call({
        jsonrpc: '2.0',
        id: 3,
        method: 'GetTask',
        params: { id, historyLength: 1, history_length: 1 },
      });
      assert.equal(twice.error?.code, -32602);
      const bad = (twice.error?.data as any[]).find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
      assert.equal(bad?.fieldViolations?.[0]?.field, 'params.historyLength');
    });

    it('v0.3 task: kind fields and lowercase states; a v0.3 method under A2A-Version 1.0 still gets v0.3 shapes', async () => {
      for (const headers of [{}, V1]) {
        const r = await call(send('message/send', 'legacy'), headers);
        assert.equal(r.result.kind, 'task');
        assert.equal(r.result.status.state, 'completed');
        assert.equal(r.result.status.message.kind, 'message');
        assert.equal(r.result.history[0].role, 'user');
        assert.deepEqual(r.result.history[0].parts, [{ kind: 'text', text: 'legacy' }]);
        assert.equal(r.result.metadata['x-arbiter.agent_id'], 'helper');
      }
    });

    it('v0.3 blocking: false returns at once', async () => {
      const body = send('message/send', 'one two three four five six seven');
      (body.params as any).configuration = { blocking: false };
      const r = await call(body, {});
      assert.ok(['submitted', 'working'].includes(r.result.status.state));
    });
  });

  describe('streaming (SSE)', () => {
    it('v1.0: event: message frames with id: seq, Task first, closes at terminal', async () => {
      const res = await rpc(url, t.token, 'helper', { ...send('SendStreamingMessage', 'a b c d e f'), id: 'st' }, V1);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const { events } = await readSse(res);
      assert.ok(events.every((e) => e.event === 'message' && e.data.jsonrpc === '2.0' && e.data.id === 'st'));
      const ids = events.map((e) => Number(e.id));
      assert.deepEqual(
        ids,
        [...ids].sort((x, y) => x - y),
        'seq ids increase',
      );
      assert.ok(events[0].data.result.task);
      const last = events[events.length - 1].data.result;
      assert.equal(last.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
    });

    it('v0.3 (seed mapping): status-updates and one response artifact, lastChunk before the final status', async () => {
      const res = await rpc(url, t.token, 'helper', send('message/stream', 'seed mapping check here'), {});
      const { events } = await readSse(res);
      const results = events.map((e) => e.data.result);
      const arts = results.filter((r) => r.kind === 'artifact-update');
      assert.ok(arts.length >= 2);
      const taskId = results[0].id ?? results[0].taskId;
      for (const a of arts) {
        assert.equal(a.artifact.artifactId, `${taskId}-text-0`);
        assert.equal(a.artifact.name, 'response');
      }
      assert.equal(arts[0].append, false);
      assert.ok(arts.slice(1).every((a) => a.append === true));
      assert.equal(arts[arts.length - 1].lastChunk, true);
      const final = results[results.length - 1];
      assert.equal(final.kind, 'status-update');
      assert.equal(final.final, true);
      assert.equal(final.status.state, 'completed');
      assert.equal(final.status.message.parts[0].text, 'seed mapping check here');
      assert.ok(
        results
          .filter((r) => r.kind === 'status-update')
          .slice(0, -1)
          .every((r) => r.final === false),
      );
    });

    it('heartbeat comments while idle; a client going away does not stop the task', async () => {
      const ac = new AbortController();
      const res = await rpc(url, t.token, 'helper', send('SendStreamingMessage', 'hold'), V1);
      const reader = res.body!.getReader();
      let seen = '';
      await within(
        (async () => {
          while (!seen.includes(': keep-alive')) {
            const { value, done } = await reader.read();
            if (done) break;
            seen += Buffer.from(value).toString();
          }
        })(),
        'a heartbeat on an idle stream',
      );
      assert.ok(seen.includes(': keep-alive'), 'heartbeat seen');
      const taskId = /"id":"([0-9a-f-]{36})"/.exec(seen)![1];
      const bus = server.running.app.get(EventBus);
      assert.equal(bus.listenerCount(taskId), 2, 'the stream is subscribed (and the run watches its task)');
      await reader.cancel();
      ac.abort();
      // The server notices the disconnect and closes the tail: its listener is gone; the run's stays.
      await waitFor(async () => (bus.listenerCount(taskId) === 1 ? true : undefined));
      const still = await call({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId } });
      assert.equal(still.result.status.state, 'TASK_STATE_WORKING');
      const canceled = await call({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: taskId } });
      assert.equal(canceled.result.status.state, 'TASK_STATE_CANCELED');
      assert.equal(bus.listenerCount(taskId), 0, 'the run stopped and let go');
    });

    it('v0.3 resubscribe replays the log then tails; a terminal task gets one final status-update', async () => {
      const done = await call(send('message/send', 'replayed'), {});
      const res = await rpc(
        url,
        t.token,
        'helper',
        { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: done.result.id } },
        {},
      );
      const { events } = await readSse(res);
      assert.equal(events.length, 1);
      assert.equal(events[0].data.result.kind, 'status-update');
      assert.equal(events[0].data.result.final, true);

      const held = await call(
        {
          ...send('message/send', 'hold'),
          params: { ...send('message/send', 'hold').params, configuration: { blocking: false } },
        },
        {},
      );
      await waitFor(async () =>
        (await call({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: held.result.id } }, {})).result.status
          .state === 'working'
          ? true
          : undefined,
      );
      const stream = followSse(
        rpc(
          url,
          t.token,
          'helper',
          { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: held.result.id } },
          {},
        ),
      );
      await stream.opened; // subscribed while the task is still working
      await call({ jsonrpc: '2.0', id: 1, method: 'tasks/cancel', params: { id: held.result.id } }, {});
      const replay = await stream.ended;
      const states = replay.events
        .map((e) => e.data.result)
        .filter((r) => r.kind === 'status-update')
        .map((r) => r.status.state);
      assert.deepEqual(states, ['submitted', 'working', 'canceled']);
      const ids = replay.events.map((e) => Number(e.id));
      assert.deepEqual(
        ids,
        [...ids].sort((x, y) => x - y),
      );
      assert.equal(ids[0], 1, 'replay starts at the first event');
    });

    it('historyLength applies to the first Task of a stream', async () => {
      const body = send('SendStreamingMessage', 'h');
      (body.params as any).configuration = { historyLength: 0 };
      const { events } = await readSse(await rpc(url, t.token, 'helper', body, V1));
      assert.equal(events[0].data.result.task.history, undefined);
    });

    it('v0.3 resubscribe on an input-required task: final only at the terminal state', async () => {
      const asked = await call(send('message/send', 'ask'), {});
      assert.equal(asked.result.status.state, 'input-required');
      const stream = followSse(
        rpc(
          url,
          t.token,
          'helper',
          { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: asked.result.id } },
          {},
        ),
      );
      await stream.opened; // subscribed before the answer
      await call(send('message/send', 'answer', { taskId: asked.result.id }), {});
      const { events } = await stream.ended;
      const statuses = events.map((e) => e.data.result).filter((r) => r.kind === 'status-update');
      assert.deepEqual(
        statuses.map((r) => `${r.status.state}:${r.final}`),
        ['submitted:false', 'working:false', 'input-required:false', 'working:false', 'completed:true'],
      );
    });

    it('ListTasks statusTimestampAfter is inclusive (proto: greater than or equal)', async () => {
      const done = await call(send('SendMessage', 'ts'));
      const at = done.result.task.status.timestamp as string;
      const r = await call({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { statusTimestampAfter: at } });
      assert.ok(r.result.tasks.some((x: { id: string }) => x.id === done.result.task.id));
      const g = await call({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: done.result.task.id } });
      assert.equal(g.result.status.timestamp, at, 'the stream, send and get agree on the status timestamp');
    });

    it('SubscribeToTask (v1.0) on a terminal task → -32004 as a plain JSON-RPC error', async () => {
      const done = await call(send('SendMessage', 'x'));
      const r = await call({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: done.result.task.id } });
      assert.equal(r.error?.code, -32004);
    });
  });

  describe('idempotency by messageId', () => {
    it('a resent messageId returns the task it created (one run), also when sent concurrently', async () => {
      const body = send('SendMessage', 'only once');
      const first = await call(body);
      const again = await call(body);
      assert.equal(again.result.task.id, first.result.task.id);
      assert.equal(again.result.task.history.length, 2, 'one user message, one reply: no second run');

      const concurrent = send('SendMessage', 'hold');
      (concurrent.params as any).configuration = { returnImmediately: true };
      const results = await Promise.all(Array.from({ length: 5 }, () => call(concurrent)));
      const ids = new Set(results.map((r) => r.result.task.id));
      assert.equal(ids.size, 1, 'one task');
      const id = [...ids][0] as string;
      // A stream with the same messageId attaches to that task.
      const stream = followSse(rpc(url, t.token, 'helper', { ...concurrent, method: 'SendStreamingMessage' }, V1));
      await stream.opened; // attached to the running task
      await call({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id } });
      const { events } = await stream.ended;
      assert.equal(events[0].data.result.task.id, id);
      assert.equal(events[events.length - 1].data.result.statusUpdate.status.state, 'TASK_STATE_CANCELED');
      // The same messageId to another agent is another task.
      const other = await call(body, V1, 'index');
      assert.notEqual(other.result.task.id, first.result.task.id);
    });

    it('the same message is compared, not its JSON: key order and an absent member change nothing; v0.3 sends the same', async () => {
      const messageId = crypto.randomUUID();
      const raw = (json: string) =>
        rpc(url, t.token, 'helper', `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${json}}}`, V1);
      const a = (await (
        await raw(
          `{"messageId":"${messageId}","role":"ROLE_USER","parts":[{"text":"ordered","metadata":{"a":1,"b":2}}]}`,
        )
      ).json()) as any;
      const b = (await (
        await raw(
          `{"parts":[{"metadata":{"b":2,"a":1},"text":"ordered"}],"role":"ROLE_USER","messageId":"${messageId}","metadata":null}`,
        )
      ).json()) as any;
      assert.equal(b.result?.task?.id, a.result.task.id, JSON.stringify(b.error));
      const v03 = (await call(
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId,
              role: 'user',
              parts: [{ kind: 'text', text: 'ordered', metadata: { a: 1, b: 2 } }],
            },
          },
        },
        {},
      )) as any;
      assert.equal(v03.result?.id, a.result.task.id, JSON.stringify(v03.error));
      // The same id with one character changed: refused, and nothing is run or stored for it.
      const changed = (await (
        await raw(
          `{"messageId":"${messageId}","role":"ROLE_USER","parts":[{"text":"ordereD","metadata":{"a":1,"b":2}}]}`,
        )
      ).json()) as any;
      assert.equal(changed.error?.code, -32602);
      assert.match(changed.error.message, /params\.message\.messageId/);
      const task = await call({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: a.result.task.id } });
      assert.equal(task.result.history.length, 2);
    });
  });

  describe('agent cards', () => {
    it('the public card (no token) is the master agent every tenant has, listing none of its agents', async () => {
      const res = await fetch(`${url}/.well-known/agent-card.json`, { headers: V1 });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('vary'), 'A2A-Version');
      // Built from this request's Host (no public base URL is configured): no shared cache may keep it.
      assert.equal(res.headers.get('cache-control'), 'private, max-age=60');
      const card = (await res.json()) as any;
      // §4.4.1 and §5.7: at least one interface and one skill, each interface one a client can call.
      const index = `${url}/v1/a2a/agents/index`;
      assert.deepEqual(
        card.supportedInterfaces.map((i: any) => [i.url, i.protocolBinding, i.protocolVersion, i.tenant]),
        [
          [index, 'JSONRPC', '1.0', 'index'],
          [index, 'JSONRPC', '0.3', undefined],
          [index, 'HTTP+JSON', '1.0', 'index'],
        ],
      );
      assert.deepEqual(
        card.skills.map((s: any) => s.id),
        ['chat'],
      );
      assert.match(card.description, /v1\/a2a\/agents\/<agent id>\/agent-card\.json/);
      assert.deepEqual(Object.keys(card.securitySchemes), ['bearer']);
      assert.equal(card.url, undefined, 'a pure v1.0 card');
      assert.ok(!JSON.stringify(card).includes('helper'), "no tenant's agent");
      // Without a version: the same card with v0.3's fields, as an agent's card (the v0.3 schema checks both below).
      const compat = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as any;
      assert.equal(compat.url, index);
      assert.equal(compat.protocolVersion, '0.3.0');
      assert.deepEqual(compat.security, [{ bearer: [] }]);
    });

    it(
      "the cards a v0.3 client reads (the public one and an agent's) are AgentCards of the v0.3 schema",
      { skip: !existsSync(V03_SCHEMA) && `no reference a2a-v0.3-schema.json at ${V03_SCHEMA}` },
      async () => {
        const schema = JSON.parse(readFileSync(V03_SCHEMA, 'utf8'));
        const valid = new Ajv({ strict: false, allErrors: true }).compile({
          ...schema,
          $ref: '#/definitions/AgentCard',
        });
        const cards = [
          await (await fetch(`${url}/.well-known/agent-card.json`)).json(),
          (await t.client.get('/v1/a2a/agents/helper/agent-card.json')).body,
        ];
        for (const card of cards) assert.ok(valid(card), JSON.stringify(valid.errors));
      },
    );

    it('per-agent card: 401 without a token, 404 for another tenant, ETag and 304', async () => {
      assert.equal((await fetch(`${url}/v1/a2a/agents/helper/agent-card.json`)).status, 401);
      const other = await newTenant(server, 'card-other');
      assert.equal((await other.client.get('/v1/a2a/agents/helper/agent-card.json')).status, 404);
      const first = await t.client.get('/v1/a2a/agents/helper/agent-card.json', V1);
      assert.equal(first.status, 200);
      const etag = first.headers.get('etag')!;
      assert.ok(etag);
      const again = await t.client.get('/v1/a2a/agents/helper/agent-card.json', { ...V1, 'if-none-match': etag });
      assert.equal(again.status, 304);
      assert.equal(first.body.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
      assert.equal(first.body.url, undefined, 'a pure v1.0 card');
      assert.ok(!first.text.includes(t.token));
    });

    it('without A2A-Version: the v0.3 top-level fields alongside the v1.0 ones', async () => {
      const res = await t.client.get('/v1/a2a/agents/helper/agent-card.json');
      assert.equal(res.body.url, `${url}/v1/a2a/agents/helper`);
      assert.equal(res.body.protocolVersion, '0.3.0');
      assert.equal(res.body.preferredTransport, 'JSONRPC');
      assert.deepEqual(res.body.security, [{ bearer: [] }]);
      assert.equal(res.body.supportedInterfaces.length, 3);
      assert.deepEqual(res.body.additionalInterfaces, [{ url: `${url}/v1/a2a/agents/helper`, transport: 'JSONRPC' }]);
      assert.equal(res.body.supportsAuthenticatedExtendedCard, true);
      assert.notEqual(
        res.headers.get('etag'),
        (await t.client.get('/v1/a2a/agents/helper/agent-card.json', V1)).headers.get('etag'),
      );
    });

    it('a malformed Host header never reaches the card', async () => {
      const { request } = await import('node:http');
      const port = Number(new URL(url).port);
      const cardWith = (host: string) =>
        new Promise<string>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              path: '/v1/a2a/agents/helper/agent-card.json',
              headers: { host, authorization: `Bearer ${t.token}`, 'a2a-version': '1.0' },
            },
            (res) => {
              let b = '';
              res.on('data', (d: Buffer) => (b += d.toString()));
              res.on('end', () => resolve(`${res.statusCode} ${b}`));
            },
          );
          req.on('error', reject);
          req.end();
        });
      // Not a host name and port: markup, a port past 65535, labels that start or end with '-', an empty label.
      for (const host of [
        'evil.example"><x',
        'card.example:99999',
        '-x-',
        'a-.example',
        'a..example',
        '1.2.3.999',
        '127.1',
        '[1:2]',
      ]) {
        const body = await cardWith(host);
        assert.ok(!body.includes(host), `${host}: ${body.slice(0, 200)}`);
      }
      // A well-formed one is used as given.
      assert.ok((await cardWith('card.example:8443')).includes('http://card.example:8443/'));
    });
  });

  describe('native API over the same log (/v1/requests)', () => {
    it('lists, gets, streams events from since_seq, cancels', async () => {
      const r = await call(send('SendMessage', 'native view'));
      const id = r.result.task.id as string;
      const got = await t.client.get(`/v1/requests/${id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.state, 'completed');
      assert.equal(got.body.reply, 'native view');
      assert.equal(got.body.agent_id, 'helper');
      const list = await t.client.get('/v1/requests?agent_id=helper&limit=2');
      assert.equal(list.body.items.length, 2);
      assert.ok(list.body.next_cursor);

      const ev = await fetch(`${url}/v1/requests/${id}/events?since_seq=2`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      const { events } = await readSse(ev);
      assert.equal(Number(events[0].id), 3);
      // Native frames: ids are log seqs, in order (events with no native frame leave gaps).
      const seqs = events.map((e) => Number(e.id));
      assert.ok(seqs.every((s, i) => s >= 3 && (i === 0 || s >= seqs[i - 1])));
      assert.equal(events[0].event, 'stream_start');
      assert.deepEqual(
        events.slice(-2).map((e) => e.event),
        ['stream_end', 'done'],
      );
      // Every frame says when its log event was stored: ISO times, in log order.
      const times = events.map((e) => Date.parse(e.data.created_at));
      assert.ok(
        times.every((t, i) => Number.isFinite(t) && (i === 0 || t >= times[i - 1])),
        JSON.stringify(events.map((e) => e.data.created_at)),
      );
      assert.deepEqual(
        { ...events[events.length - 1].data, input_tokens: 0, output_tokens: 0 },
        {
          seq: seqs[seqs.length - 1],
          request_id: id,
          created_at: events[events.length - 1].data.created_at,
          ok: true,
          content: 'native view',
          input_tokens: 0,
          output_tokens: 0,
        },
      );
      // The raw log on request.
      const log = await readSse(
        await fetch(`${url}/v1/requests/${id}/events?since_seq=2&format=log`, {
          headers: { authorization: `Bearer ${t.token}` },
        }),
      );
      const logSeqs = log.events.map((e) => Number(e.id));
      assert.deepEqual(
        logSeqs,
        logSeqs.map((_, i) => 3 + i),
        'gap-free',
      );
      assert.equal(log.events[log.events.length - 1].event, 'status');
      assert.equal(log.events[log.events.length - 1].data.state, 'TASK_STATE_COMPLETED');

      const held = await call({
        ...send('SendMessage', 'hold'),
        params: { ...send('SendMessage', 'hold').params, configuration: { returnImmediately: true } },
      });
      const hid = held.result.task.id as string;
      const cancel = await t.client.post(`/v1/requests/${hid}/cancel`);
      assert.equal(cancel.status, 200);
      assert.equal(cancel.body.state, 'canceled');
      assert.equal((await t.client.post(`/v1/requests/${hid}/cancel`)).status, 409);
      assert.equal((await t.client.get('/v1/requests/unknown')).status, 404);
      const other = await newTenant(server, 'native-other');
      assert.equal((await other.client.get(`/v1/requests/${id}`)).status, 404);
      assert.equal((await other.client.post(`/v1/requests/${id}/cancel`)).status, 404);
      assert.equal((await t.client.get(`/v1/requests/${id}/events?since_seq=-1`)).status, 400);
    });

    it('a resume point past the last event: the stream shows nothing before it and ends when the task does', async () => {
      const held = await call({
        ...send('SendMessage', 'hold'),
        params: { ...send('SendMessage', 'hold').params, configuration: { returnImmediately: true } },
      });
      const hid = held.result.task.id as string;
      // A stream that never ended would fail the test here, by this bound, instead of hanging it.
      const open = (query: string, headers: Record<string, string> = {}) =>
        fetch(`${url}/v1/requests/${hid}/events${query}`, {
          headers: { authorization: `Bearer ${t.token}`, ...headers },
          signal: AbortSignal.timeout(60_000),
        });
      const streams = await Promise.all([
        open('?since_seq=1000000000'),
        open('?since_seq=50&format=log'),
        open('', { 'last-event-id': '999999999' }),
      ]);
      for (const s of streams) assert.equal(s.status, 200);
      // The streams are open and reading live (a read after their headers); then the task ends.
      assert.equal((await t.client.get(`/v1/requests/${hid}`)).body.state, 'working');
      assert.equal((await t.client.post(`/v1/requests/${hid}/cancel`)).status, 200);
      for (const s of streams) assert.deepEqual((await readSse(s)).events, []);
    });
  });
});
