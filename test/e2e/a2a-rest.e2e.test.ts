// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { GetTaskRequest, SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { a2a, followSse, readSse, restClient, rpc, textMessage, V1 } from '../helpers/a2a.js';

const SECRET_KEY = 'sk-ant-test-never-shown-0123456789';

const msg = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
});

/** Asserts the §11.6 shape: `{error: {code, status, message, details}}` with the HTTP status as `code`. */
function assertStatus(res: { status: number; body: any; text: string }, http: number, reason?: string): any {
  assert.equal(res.status, http, res.text);
  const e = res.body?.error;
  assert.ok(e, `a google.rpc.Status body: ${res.text}`);
  assert.equal(e.code, http);
  assert.equal(typeof e.status, 'string');
  assert.equal(typeof e.message, 'string');
  assert.ok(Array.isArray(e.details));
  const info = e.details.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  if (reason) {
    assert.equal(info?.reason, reason, res.text);
    assert.equal(info?.domain, 'a2a-protocol.org');
  } else {
    assert.equal(info, undefined, res.text);
  }
  return e;
}

describe('HTTP+JSON/REST binding (spec §11)', () => {
  let server: TestServer;
  let t: TestTenant;
  let other: TestTenant;
  let client: Client;
  let base: string;
  before(async () => {
    server = await startTestServer({
      env: {
        ARBITER_ECHO_DELAY_MS: '5',
        ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
        ARBITER_MAX_BODY_BYTES: '65536',
        ARBITER_EXTENDED_CARD_MODEL: 'true',
        ANTHROPIC_API_KEY: SECRET_KEY,
      },
    });
    t = await newTenant(server, 'rest');
    other = await newTenant(server, 'rest-other');
    await newAgent(t, {
      id: 'writer',
      role: 'technical writer',
      goal: 'write docs',
      model: 'anthropic/claude-sonnet-4-5',
      rules: ['cite sources'],
      capabilities: ['/write', 'documentation'],
    });
    await newAgent(t, { id: 'plain', role: 'echo' });
    client = await restClient(server.url, t.token, 'plain');
    base = '/v1/a2a/agents/plain';
  });
  after(() => server.close());

  const get = (path: string, headers: Record<string, string> = V1) => t.client.get(base + path, headers);
  const post = (path: string, body?: unknown, headers: Record<string, string> = V1) =>
    t.client.post(base + path, body, headers);

  describe('§11.3 routes with the official SDK REST transport', () => {
    it('the client picked the card’s HTTP+JSON interface', () => {
      assert.equal(client.transport.protocolName, 'HTTP+JSON');
    });

    it('POST message:send, GET tasks/{id}, GET tasks', async () => {
      const sent = (await client.sendMessage(textMessage('over rest'))) as Task;
      assert.equal(sent.status?.state, TaskState.TASK_STATE_COMPLETED);
      const got = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id, historyLength: 1 }));
      assert.equal(got.history.length, 1);
      const raw = await get(`/tasks/${sent.id}`);
      assert.equal(raw.status, 200);
      assert.match(raw.headers.get('content-type') ?? '', /^application\/a2a\+json/);
      assert.equal(raw.body.status.state, 'TASK_STATE_COMPLETED');
      const list = await get(`/tasks?contextId=${sent.contextId}&includeArtifacts=true&pageSize=5`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.tasks.map((x: any) => x.id),
        [sent.id],
      );
      assert.equal(list.body.tasks[0].artifacts.length, 1);
    });

    it('POST message:stream is SSE of StreamResponse objects, data frames only', async () => {
      const frames: StreamResponse[] = [];
      for await (const e of client.sendMessageStream(textMessage('a streamed reply'))) frames.push(e);
      assert.equal(frames[0]?.payload?.$case, 'task');
      const last = frames[frames.length - 1]?.payload;
      assert.equal(last?.$case === 'statusUpdate' && last.value.status?.state, TaskState.TASK_STATE_COMPLETED);
      const res = await fetch(`${server.url}${base}/message:stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/a2a+json', ...V1 },
        body: JSON.stringify(msg('raw stream')),
      });
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const { events } = await readSse(res);
      assert.ok(events.every((e) => e.event === undefined && !('jsonrpc' in e.data)));
      assert.ok(events[0]?.data.task);
    });

    it('tasks/{id}:subscribe (POST, and GET as a2a.proto has it) then :cancel; a stream error after the first frame is an `error` event', async () => {
      const holding = await post('/message:send', { ...msg('hold'), configuration: { returnImmediately: true } });
      const id = holding.body.task.id as string;
      const subscribe = (method: string) =>
        followSse(
          fetch(`${server.url}${base}/tasks/${id}:subscribe`, {
            method,
            headers: { authorization: `Bearer ${t.token}`, ...V1 },
          }),
        );
      const subs = [subscribe('POST'), subscribe('GET')];
      for (const sub of subs) await sub.opened; // subscribed while the task works
      const canceled = await post(`/tasks/${id}:cancel`);
      assert.equal(canceled.status, 200);
      assert.equal(canceled.body.status.state, 'TASK_STATE_CANCELED');
      for (const sub of subs) {
        const { events } = await sub.ended;
        assert.equal(events[0]?.data.task.status.state, 'TASK_STATE_WORKING');
        assert.equal(events[events.length - 1]?.data.statusUpdate.status.state, 'TASK_STATE_CANCELED');
      }
      // Terminal now: subscribing is an ordinary error response, not a stream.
      const again = await t.client.request('POST', `${base}/tasks/${id}:subscribe`, { headers: V1 });
      assertStatus(again, 400, 'UNSUPPORTED_OPERATION');
      assertStatus(await post(`/tasks/${id}:cancel`), 400, 'TASK_NOT_CANCELABLE');
    });

    it('revoking the token a REST stream was opened with ends it with an `error` event (UNAUTHENTICATED)', async () => {
      const extra = (await server.admin.post(`/v1/admin/tenants/${t.id}/tokens`)).body as { id: string; token: string };
      const holding = await post('/message:send', { ...msg('hold'), configuration: { returnImmediately: true } });
      const id = holding.body.task.id as string;
      const sub = followSse(
        fetch(`${server.url}${base}/tasks/${id}:subscribe`, {
          method: 'POST',
          headers: { authorization: `Bearer ${extra.token}`, ...V1 },
        }),
      );
      await sub.opened; // the stream is open (and held) before its token goes
      const revoked = await server.admin.delete(`/v1/admin/tenants/${t.id}/tokens/${extra.id}`);
      assert.ok(revoked.status < 300, revoked.text);
      const { events } = await sub.ended;
      const last = events.at(-1)!;
      assert.equal(last.event, 'error');
      assert.equal(last.data.error.code, 401);
      assert.equal(last.data.error.details.at(-1).reason, 'UNAUTHENTICATED');
      // The task itself goes on for the tenant's other token.
      assert.equal((await get(`/tasks/${id}`)).body.status.state, 'TASK_STATE_WORKING');
      assert.equal((await post(`/tasks/${id}:cancel`)).status, 200);
    });

    it('§11.3.3 push configs: the SDK REST transport creates, reads, lists and deletes them; errors in §11.6 shape', async () => {
      const task = (await client.sendMessage(
        SendMessageRequest.fromJSON({
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold' }] },
          configuration: { returnImmediately: true },
        }),
      )) as Task;
      const hook = 'http://127.0.0.1:9/hook';
      const created = await client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'r1',
        taskId: task.id,
        url: hook,
        token: 'rest-secret-token',
        authentication: { scheme: 'Bearer', credentials: 'rest-secret-cred' },
      });
      assert.equal(created.id, 'r1');
      assert.equal(created.url, hook);
      assert.equal(created.token, '', 'the token never comes back');
      const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'r1' });
      assert.deepEqual(got, created);
      const listed = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: task.id,
        pageSize: 0,
        pageToken: '',
      });
      assert.deepEqual(
        listed.configs.map((c) => c.id),
        ['r1'],
      );
      const raw = await get(`/tasks/${task.id}/pushNotificationConfigs/r1`);
      assert.equal(raw.status, 200);
      assert.ok(!raw.text.includes('rest-secret'), raw.text);
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'r1' });
      assertStatus(await get(`/tasks/${task.id}/pushNotificationConfigs/r1`), 404, 'TASK_NOT_FOUND');
      // Another tenant's task answers like a missing one; a webhook the egress policy refuses is a 400.
      const theirs = await other.client.post(`${base}/tasks/${task.id}/pushNotificationConfigs`, { url: hook }, V1);
      assert.equal(theirs.status, 404, theirs.text);
      const missing = await post(`/tasks/${randomUUID()}/pushNotificationConfigs`, { url: hook });
      assert.equal(missing.status, 404, missing.text);
      const refused = await post(`/tasks/${task.id}/pushNotificationConfigs`, { url: 'http://169.254.169.254/hook' });
      assert.equal(refused.status, 400, refused.text);
      await post(`/tasks/${task.id}:cancel`, {});
    });
  });

  describe('§3.6 versions and PocketPaw-style clients', () => {
    it('A2A-Version as header or query; an unsupported one is 400 VERSION_NOT_SUPPORTED', async () => {
      const sent = await post('/message:send', msg('versions'));
      const id = sent.body.task.id as string;
      assert.equal(
        (await t.client.get(`${base}/tasks/${id}?A2A-Version=1.0`)).body.status.state,
        'TASK_STATE_COMPLETED',
      );
      for (const res of [
        await get(`/tasks/${id}`, { 'a2a-version': '2.0' }),
        await t.client.get(`${base}/tasks/${id}?A2A-Version=0.9`),
      ]) {
        const e = assertStatus(res, 400, 'VERSION_NOT_SUPPORTED');
        assert.equal(e.status, 'FAILED_PRECONDITION');
      }
    });

    it('without A2A-Version (0.3, §3.6.2) the answers are in the v0.3 shapes; history_length is read', async () => {
      const sent = await post(
        '/message:send',
        { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'paw' }] } },
        {},
      );
      assert.equal(sent.status, 200, sent.text);
      assert.equal(sent.body.kind, 'task');
      assert.equal(sent.body.status.state, 'completed');
      const id = sent.body.id as string;
      assert.equal((await get(`/tasks/${id}`, {})).body.history.length, 2);
      assert.equal((await get(`/tasks/${id}?history_length=1`, {})).body.history.length, 1);
      assert.equal((await get(`/tasks/${id}?history_length=0`, {})).body.history, undefined);
      assert.equal((await get(`/tasks/${id}?history_length=1`)).body.history.length, 1, 'and under 1.0');
      const both = assertStatus(await get(`/tasks/${id}?historyLength=1&history_length=2`), 400, 'INVALID_PARAMS');
      assert.match(both.message, /history_length/);
    });

    it('v1.0 bodies and queries in proto field names (message_id, page_size …) as ProtoJSON reads them; answers in JSON names', async () => {
      const messageId = randomUUID();
      const sent = await post('/message:send', {
        message: {
          message_id: messageId,
          role: 'ROLE_USER',
          parts: [{ text: 'snake case', media_type: 'text/plain' }],
          metadata: { client_key: 'kept' },
        },
        configuration: { history_length: 1, accepted_output_modes: ['text/plain'], return_immediately: false },
      });
      assert.equal(sent.status, 200, sent.text);
      const task = sent.body.task;
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(typeof task.contextId, 'string');
      assert.equal('context_id' in task, false);
      assert.equal(task.history.length, 1, 'history_length was read');
      const got = await get(`/tasks/${task.id}`);
      assert.equal(got.body.history[0].messageId, messageId);
      assert.deepEqual(got.body.history[0].metadata, { client_key: 'kept' });
      const list = await get(`/tasks?context_id=${task.contextId}&page_size=1&include_artifacts=true`);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.body.tasks.map((x: any) => x.id),
        [task.id],
      );
      assert.equal(list.body.pageSize, 1);
      assert.equal(list.body.tasks[0].artifacts.length, 1);
      const both = assertStatus(
        await post('/message:send', msg('twice', { message_id: messageId })),
        400,
        'INVALID_PARAMS',
      );
      assert.equal(both.details.find((d: any) => d.fieldViolations).fieldViolations[0].field, 'message.messageId');
      assert.match(both.message, /messageId is given twice, as messageId and as message_id/);
      const pages = assertStatus(await get('/tasks?pageSize=2&page_size=2'), 400, 'INVALID_PARAMS');
      assert.match(pages.message, /pageSize is given twice/);
      // v0.3 is JSON Schema, camelCase only: there message_id is no field.
      const v03 = assertStatus(
        await post(
          '/message:send',
          { message: { kind: 'message', message_id: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
          {},
        ),
        400,
        'INVALID_PARAMS',
      );
      assert.match(v03.message, /message\.messageId is required/);
    });

    it('v0.3 bodies carry kind on the message and its parts (the v0.3 schema requires it): 400 naming it', async () => {
      const noKind = assertStatus(
        await post(
          '/message:send',
          { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
          {},
        ),
        400,
        'INVALID_PARAMS',
      );
      assert.equal(noKind.details[0].fieldViolations[0].field, 'message.kind');
      const noPartKind = assertStatus(
        await post(
          '/message:stream',
          { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ text: 'x' }] } },
          {},
        ),
        400,
        'INVALID_PARAMS',
      );
      assert.equal(noPartKind.details[0].fieldViolations[0].field, 'message.parts[0].kind');
    });

    it('v0.3 JSON-RPC aliases tasks/send and tasks/sendSubscribe (seed 004)', async () => {
      const v03 = (method: string) => ({
        jsonrpc: '2.0',
        id: 7,
        method,
        params: {
          message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: method }] },
        },
      });
      const sent = (await (await rpc(server.url, t.token, 'plain', v03('tasks/send'))).json()) as any;
      assert.equal(sent.result.kind, 'task');
      assert.equal(sent.result.status.state, 'completed');
      const { events } = await readSse(await rpc(server.url, t.token, 'plain', v03('tasks/sendSubscribe')));
      assert.equal(events[0]?.data.result.kind, 'task');
      assert.equal(events[events.length - 1]?.data.result.final, true);
      // Not v1.0 names: under A2A-Version 1.0 they are still the v0.3 dialect's.
      const under1 = (await (await rpc(server.url, t.token, 'plain', v03('tasks/send'), V1)).json()) as any;
      assert.equal(under1.result.kind, 'task');
    });
  });

  describe('§11.6 errors and bad input (raw HTTP)', () => {
    it('401 before the body is read, in the §11.6 shape, on every route', async () => {
      for (const [method, path] of [
        ['POST', '/message:send'],
        ['GET', '/tasks'],
        ['GET', '/extendedAgentCard'],
        ['POST', '/nope'],
      ] as const) {
        const res = await server.http.request(method, base + path, {
          raw: method === 'POST' ? '{"half a body' : undefined,
          headers: { 'content-type': 'text/plain', ...V1 },
        });
        const e = assertStatus(res, 401, 'UNAUTHENTICATED');
        assert.equal(e.status, 'UNAUTHENTICATED');
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
    });

    it('bad JSON 400, a non-object body 400 naming it, wrong content type 415, oversize 413', async () => {
      const raw = (body: string, type = 'application/json') =>
        t.client.request('POST', `${base}/message:send`, { raw: body, headers: { 'content-type': type, ...V1 } });
      assertStatus(await raw('{"message": '), 400);
      const arr = assertStatus(await raw('[1,2]'), 400, 'INVALID_PARAMS');
      assert.equal(arr.details[0].fieldViolations[0].field, 'body');
      assertStatus(await raw(JSON.stringify(msg('x')), 'text/plain'), 415);
      assert.equal((await raw(JSON.stringify(msg('x')), 'application/a2a+json')).status, 200);
      assertStatus(await raw(JSON.stringify(msg('x'.repeat(70_000)))), 413);
      const missing = assertStatus(await post('/message:send', {}), 400, 'INVALID_PARAMS');
      assert.equal(missing.details[0].fieldViolations[0].field, 'message');
    });

    it('unknown route → 404 METHOD_NOT_FOUND, wrong method → 405 with Allow, unknown agent → 404', async () => {
      assertStatus(await get('/message:sned'), 404, 'METHOD_NOT_FOUND');
      assertStatus(await get('/tasks/a/b/c'), 404, 'METHOD_NOT_FOUND');
      const wrong = await get('/message:send');
      assertStatus(wrong, 405);
      assert.equal(wrong.headers.get('allow'), 'POST');
      const del = await t.client.request('DELETE', `${base}/tasks/x`, { headers: V1 });
      assertStatus(del, 405);
      assert.equal(del.headers.get('allow'), 'GET');
      assertStatus(await t.client.get('/v1/a2a/agents/nobody/tasks', V1), 404, 'TASK_NOT_FOUND');
      assertStatus(await t.client.get('/v1/a2a/agents/bad%20id!/tasks', V1), 404, 'TASK_NOT_FOUND');
    });

    it('a refused role or part says what it got, in the §11.6 message and the field violation', async () => {
      const e = assertStatus(
        await post('/message:send', msg('x', { parts: [{}], role: 'ROLE_USER' })),
        400,
        'INVALID_PARAMS',
      );
      assert.equal(
        e.message,
        'invalid params: message.parts[0] must have one of text, raw, url, data (got an empty object)',
      );
      assert.equal(e.details[0].fieldViolations[0].field, 'message.parts[0]');
      const role = assertStatus(await post('/message:send', msg('x', { role: 'ROLE_AGENT' })), 400, 'INVALID_PARAMS');
      assert.match(role.message, /message\.role must be ROLE_USER \(got "ROLE_AGENT"\)$/);
    });

    it('bad query parameters are 400 naming the parameter (§11.5)', async () => {
      for (const [query, field] of [
        ['pageSize=0', 'pageSize'],
        ['pageSize=ten', 'pageSize'],
        ['includeArtifacts=maybe', 'includeArtifacts'],
        ['status=TASK_STATE_BOGUS', 'status'],
        ['historyLength=-1', 'historyLength'],
        ['historyLength=1&historyLength=2', 'historyLength'],
        ['statusTimestampAfter=yesterday', 'statusTimestampAfter'],
        ['pageToken=forged', 'pageToken'],
      ]) {
        const e = assertStatus(await get(`/tasks?${query}`), 400, 'INVALID_PARAMS');
        assert.equal(e.details[0].fieldViolations[0].field, field, query);
      }
      const ok = await get('/tasks?status=TASK_STATE_COMPLETED&pageSize=1&unknownParam=1');
      assert.equal(ok.status, 200);
      assert.ok(ok.body.tasks.every((x: any) => x.status.state === 'TASK_STATE_COMPLETED'));
    });

    it("another tenant's task and agent answer exactly like missing ones; refused input changes nothing", async () => {
      const mine = await post('/message:send', msg('mine'));
      const id = mine.body.task.id as string;
      const missing = randomUUID();
      const theirs = await other.client.get(`${base}/tasks/${id}`, V1);
      const none = await other.client.get(`${base}/tasks/${missing}`, V1);
      // `plain` does not exist for the other tenant at all: the agent is not found, like any missing agent.
      assert.equal(theirs.status, 404);
      assert.deepEqual(theirs.body, none.body);
      const before = (await get('/tasks?pageSize=100')).body.totalSize as number;
      await post('/message:send', { message: { role: 'ROLE_USER', parts: [] } });
      await post('/message:send', msg('x', { role: 'ROLE_AGENT' }));
      await t.client.request('POST', `${base}/message:send`, {
        raw: '{',
        headers: { 'content-type': 'application/json', ...V1 },
      });
      assert.equal((await get('/tasks?pageSize=100')).body.totalSize, before);
    });

    it('a malformed percent-encoding in the path is a clear 400 (Express refuses it before routing), never a 500', async () => {
      const bad = await get('/tasks/%E0%A4%A');
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /decode/);
      const res = await new Promise<number>((resolve, reject) => {
        const u = new URL(server.url);
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            path: `${base}/tasks/%ZZ`,
            headers: { authorization: `Bearer ${t.token}`, ...V1 },
          },
          (r) => {
            r.resume();
            resolve(r.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.equal(res, 400);
    });
  });

  describe('extended agent card (§3.1.11, §13.3)', () => {
    const path = '/v1/a2a/agents/writer';

    it('the public card says extendedAgentCard: true (v0.3: supportsAuthenticatedExtendedCard) and lists HTTP+JSON', async () => {
      const v1 = await t.client.get(`${path}/agent-card.json`, V1);
      assert.equal(v1.body.capabilities.extendedAgentCard, true);
      assert.deepEqual(
        v1.body.supportedInterfaces.map((i: any) => i.protocolBinding),
        ['JSONRPC', 'JSONRPC', 'HTTP+JSON'],
      );
      const v03 = await t.client.get(`${path}/agent-card.json`);
      assert.equal(v03.body.supportsAuthenticatedExtendedCard, true);
      assert.equal(v03.body.preferredTransport, 'JSONRPC');
      // v0.3's own REST binding (proto-JSON under <url>/v1/…) is not served, so the v0.3 fields do not list it.
      assert.deepEqual(
        v03.body.additionalInterfaces.map((i: any) => i.transport),
        ['JSONRPC'],
      );
      assert.ok(
        v1.body.supportedInterfaces.every((i: any) => i.protocolBinding !== 'HTTP+JSON' || i.protocolVersion === '1.0'),
      );
      // Public: only the tools granted by name, no profile.
      assert.deepEqual(
        v1.body.skills.map((s: any) => s.id),
        ['chat', 'write-file', 'documentation'],
      );
      assert.equal(v1.body.capabilities.extensions, undefined);
    });

    it('GET extendedAgentCard, GetExtendedAgentCard and agent/getAuthenticatedExtendedCard give the extended card', async () => {
      const rest = await t.client.get(`${path}/extendedAgentCard`, V1);
      assert.equal(rest.status, 200);
      const v1 = await a2a(server.url, t.token, 'writer').call('GetExtendedAgentCard');
      const v03 = (await (
        await rpc(server.url, t.token, 'writer', {
          jsonrpc: '2.0',
          id: 1,
          method: 'agent/getAuthenticatedExtendedCard',
        })
      ).json()) as any;
      assert.deepEqual(v1.result, rest.body, 'the same card on both bindings');
      assert.equal(v03.result.supportsAuthenticatedExtendedCard, true);
      assert.equal(v03.result.url, `${server.url}${path}`);
      const card = rest.body;
      const write = card.skills.find((s: any) => s.id === 'write-file');
      assert.match(write.description, /files/);
      const profile = card.capabilities.extensions[0];
      assert.equal(profile.uri, 'urn:arbiter:agent-profile:v1');
      assert.deepEqual(profile.params, {
        role: 'technical writer',
        goal: 'write docs',
        rules: ['cite sources'],
        tools: ['/write'],
        mode: 'standard',
        modelFamily: 'anthropic/claude',
      });
      for (const text of [rest.text, JSON.stringify(v1), JSON.stringify(v03)]) {
        assert.ok(!text.includes(SECRET_KEY) && !text.includes(t.token) && !text.includes('claude-sonnet-4-5'));
      }
    });

    it('an agent without tool grants lists every tool it may use', async () => {
      const card = (await t.client.get('/v1/a2a/agents/plain/extendedAgentCard', V1)).body;
      assert.deepEqual(card.capabilities.extensions[0].params.tools, [
        '/agent',
        '/parallel',
        '/write',
        '/mem',
        '/fetch',
        '/a2a',
      ]);
      assert.equal(card.capabilities.extensions[0].params.modelFamily, 'echo');
    });

    it('unauthenticated → 401 on every binding; another tenant → not found like a missing agent', async () => {
      assertStatus(await server.http.get(`${path}/extendedAgentCard`, V1), 401, 'UNAUTHENTICATED');
      for (const method of ['GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard']) {
        assert.equal((await a2a(server.url, undefined, 'writer').post(method)).status, 401);
        const theirs = await a2a(server.url, other.token, 'writer').call(method);
        const none = await a2a(server.url, other.token, 'ghost').call(method);
        assert.equal(theirs.error?.code, -32001, method);
        assert.equal(theirs.error?.message.replace('writer', 'X'), none.error?.message.replace('ghost', 'X'));
      }
      const theirs = await other.client.get(`${path}/extendedAgentCard`, V1);
      const none = await other.client.get('/v1/a2a/agents/ghost/extendedAgentCard', V1);
      assertStatus(theirs, 404, 'TASK_NOT_FOUND');
      assert.equal(theirs.body.error.message.replace('writer', 'X'), none.body.error.message.replace('ghost', 'X'));
    });
  });
});
