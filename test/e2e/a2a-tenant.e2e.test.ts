import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { CancelTaskRequest, GetTaskRequest, ListTasksRequest, SubscribeToTaskRequest, type Task } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import * as grpc from '@grpc/grpc-js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import { a2a, authFetch, bearerCredentials, cardUrl, rpc, sendParams, textMessage, V1, V03 } from '../helpers/a2a.js';

type BindingName = 'JSONRPC' | 'HTTP+JSON' | 'GRPC';

/** What a client sent: the HTTP request (URL and JSON body) or the gRPC request message. */
interface Sent {
  url?: string;
  body?: any;
  message?: any;
}

/** A fetch that records every request it sends (then adds the bearer, as `authFetch` does). */
function recordingFetch(token: string, sent: Sent[]): typeof fetch {
  return (input, init) => {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    sent.push({ url: String(input instanceof Request ? input.url : input), body });
    return authFetch(token)(input, init);
  };
}

/** A gRPC client interceptor that records every request message. */
const recordingInterceptor =
  (sent: Sent[]): grpc.Interceptor =>
  (options, next) =>
    new grpc.InterceptingCall(next(options), {
      sendMessage: (message, forward) => {
        sent.push({ message });
        forward(message);
      },
    });

/** The official SDK client the documented way (`ClientFactory` from the card), on one binding, recording. */
async function sdkClient(server: TestServer, token: string, agent: string, binding: BindingName, sent: Sent[]) {
  const transport: TransportFactory =
    binding === 'JSONRPC'
      ? new JsonRpcTransportFactory({ fetchImpl: recordingFetch(token, sent) })
      : binding === 'HTTP+JSON'
        ? new RestTransportFactory({ fetchImpl: recordingFetch(token, sent) })
        : new GrpcTransportFactory({
            grpcCallOptions: { credentials: bearerCredentials(token), interceptors: [recordingInterceptor(sent)] },
          });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [transport],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(token) }),
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(cardUrl(server.url, agent), '');
}

/** An SDK call's error as the client saw it (reason, the binding's code, message). */
async function failure(p: Promise<unknown>): Promise<{ reason?: string; code?: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { reason?: string; envelopeCode?: number; statusCode?: number; status?: number; message: string };
    return { reason: e.reason, code: e.envelopeCode ?? e.statusCode ?? e.status, message: e.message };
  }
  assert.fail('expected the call to fail');
}

const asTask = (r: unknown): Task => r as Task;
/** A transport called directly sends no A2A-Version of its own (the `Client` does). */
const ASK_V1 = { serviceParameters: { 'A2A-Version': '1.0' } };
const BINDINGS: BindingName[] = ['JSONRPC', 'HTTP+JSON', 'GRPC'];

/**
 * a2a.proto's `tenant` (spec §8.3.2): every 1.0 interface of an agent's
 * card carries the agent's id as its tenant, the official client echoes it
 * (JSON-RPC params, REST path prefix and body, gRPC field), and a request
 * whose tenant names anything else answers exactly like a missing agent.
 */
describe('tenant binding: the card names the agent, and a request naming another is a missing agent', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let mine: Task;
  /** Names that are not the addressed agent `alpha`, and a caller of the tenant that has no agent by that name. */
  let others: { name: string; id: string; lacking: () => TestTenant }[];
  before(async () => {
    server = await startTestServer({
      env: { ...GRPC_ON, ARBITER_ECHO_DELAY_MS: '5', ARBITER_PUSH_ALLOWLIST: '127.0.0.1' },
    });
    [a, b] = [await newTenant(server, 'tenant-a'), await newTenant(server, 'tenant-b')];
    await newAgent(a, { id: 'alpha', role: 'first' });
    await newAgent(a, { id: 'beta', role: 'second' });
    await newAgent(b, { id: 'bravo', role: 'theirs' });
    others = [
      { name: "another of the tenant's agents", id: 'beta', lacking: () => b },
      { name: "another tenant's agent", id: 'bravo', lacking: () => a },
      { name: 'an agent nobody has', id: `nobody-${randomUUID().slice(0, 8)}`, lacking: () => a },
    ];
    const sent: Sent[] = [];
    mine = asTask(await (await sdkClient(server, a.token, 'alpha', 'JSONRPC', sent)).sendMessage(textMessage('mine')));
  });
  after(() => server?.close());

  it("every 1.0 interface of the card carries the agent's id as tenant (0.3 has none), in both card shapes", async () => {
    for (const headers of [V1, V03]) {
      const card = (await (await authFetch(a.token)(cardUrl(server.url, 'alpha'), { headers })).json()) as any;
      assert.deepEqual(
        card.supportedInterfaces.map((i: any) => [i.protocolBinding, i.protocolVersion, i.tenant]),
        [
          ['JSONRPC', '1.0', 'alpha'],
          ['JSONRPC', '0.3', undefined],
          ['HTTP+JSON', '1.0', 'alpha'],
          ['GRPC', '1.0', 'alpha'],
        ],
      );
      if (headers === V03) assert.deepEqual(Object.keys(card.additionalInterfaces[0]), ['url', 'transport']);
    }
  });

  for (const binding of BINDINGS) {
    it(`${binding}: the official client works, and every request it sends carries the card's tenant`, async () => {
      const sent: Sent[] = [];
      const client: Client = await sdkClient(server, a.token, 'alpha', binding, sent);
      assert.equal(client.transport.protocolName, binding);
      const done = asTask(await client.sendMessage(textMessage('hello')));
      assert.equal(done.metadata?.['x-arbiter.agent_id'], 'alpha');
      let frames = 0;
      for await (const frame of client.sendMessageStream(textMessage('streamed'))) frames += frame.payload ? 1 : 0;
      assert.ok(frames > 1);
      assert.equal((await client.getTask(GetTaskRequest.fromJSON({ id: done.id }))).id, done.id);
      const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: done.contextId }));
      assert.deepEqual(
        listed.tasks.map((t) => t.id),
        [done.id],
      );
      const held = asTask(await client.sendMessage(textMessage('hold', { returnImmediately: true })));
      const hook = { tenant: '', taskId: held.id, id: 'h1' };
      await client.createTaskPushNotificationConfig({
        ...hook,
        url: 'http://127.0.0.1:9/hook',
        token: '',
        authentication: undefined,
      });
      assert.equal((await client.getTaskPushNotificationConfig(hook)).id, 'h1');
      const configs = await client.listTaskPushNotificationConfig({ ...hook, pageSize: 0, pageToken: '' });
      assert.deepEqual(
        configs.configs.map((c) => c.id),
        ['h1'],
      );
      await client.deleteTaskPushNotificationConfig(hook);
      const subscription = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: held.id }));
      for await (const e of subscription) {
        if (e.payload?.$case === 'task') await client.cancelTask(CancelTaskRequest.fromJSON({ id: held.id }));
      }
      assert.ok((await client.getAgentCard()).capabilities?.extensions.length, 'the extended card');

      // 12 calls, every one of them naming the agent.
      assert.equal(sent.length, 12, JSON.stringify(sent));
      for (const s of sent) {
        if (binding === 'GRPC') assert.equal(s.message.tenant, 'alpha');
        if (binding === 'JSONRPC') {
          assert.equal(new URL(s.url!).pathname, '/v1/a2a/agents/alpha');
          assert.equal(s.body.params.tenant, 'alpha', JSON.stringify(s.body));
        }
        if (binding === 'HTTP+JSON') {
          assert.match(new URL(s.url!).pathname, /^\/v1\/a2a\/agents\/alpha\/alpha\//);
          if (s.body) assert.equal(s.body.tenant, 'alpha', JSON.stringify(s.body));
        }
      }
    });
  }

  it('a tenant naming any other agent answers exactly like that agent missing, on all three (the SDK client)', async () => {
    const before = (await a2a(server.url, a.token, 'alpha').list()).result.totalSize as number;
    for (const binding of BINDINGS) {
      const client = await sdkClient(server, a.token, 'alpha', binding, []);
      // A gRPC call has no URL: its tenant is its only address, so naming another of the caller's agents is
      // a call to that agent (whose tasks are its own: see the gRPC test below).
      for (const other of binding === 'GRPC' ? others.filter((o) => o.id !== 'beta') : others) {
        const got = await failure(client.transport.getTask({ tenant: other.id, id: mine.id }, ASK_V1));
        const sent = await failure(client.transport.sendMessage({ ...textMessage('no'), tenant: other.id }, ASK_V1));
        const expected = { reason: 'TASK_NOT_FOUND', message: `agent '${other.id}' not found` };
        assert.deepEqual({ reason: got.reason, message: got.message }, expected, `${binding} ${other.name}`);
        assert.deepEqual(sent, got, `${binding} ${other.name}`);
        assert.equal(got.code, { JSONRPC: -32001, 'HTTP+JSON': 404, GRPC: grpc.status.NOT_FOUND }[binding]);
      }
    }
    // Nothing was sent to anyone: alpha has no more tasks than before.
    assert.equal((await a2a(server.url, a.token, 'alpha').list()).result.totalSize, before);
  });

  it('JSON-RPC: params.tenant of another agent → byte for byte the answer of a missing agent; its own works', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['GetTask', { id: mine.id }],
      ['SendMessage', sendParams('no', { messageId: 'm-1' })],
      ['ListTasks', {}],
      ['GetExtendedAgentCard', {}],
    ];
    for (const other of others) {
      for (const [method, params] of calls) {
        const named = await (
          await rpc(
            server.url,
            a.token,
            'alpha',
            { jsonrpc: '2.0', id: 1, method, params: { tenant: other.id, ...params } },
            V1,
          )
        ).text();
        const missing = await (
          await rpc(server.url, other.lacking().token, other.id, { jsonrpc: '2.0', id: 1, method, params }, V1)
        ).text();
        assert.equal(named, missing, `${method}, ${other.name}`);
        assert.equal(JSON.parse(named).error.code, -32001);
      }
    }
    // A tenant that cannot be an agent id at all: the same answer, naming it.
    const odd = await a2a(server.url, a.token, 'alpha').call('GetTask', { tenant: 'no such/agent', id: mine.id });
    const nobody = await a2a(server.url, a.token, 'alpha').call('GetTask', { tenant: 'nobody', id: mine.id });
    assert.equal(JSON.stringify(odd).replace('no such/agent', 'nobody'), JSON.stringify(nobody));
    // The agent's own id, an empty one or none: the task. v0.3 has no tenant: a `tenant` key is ignored.
    for (const tenant of ['alpha', '', undefined]) {
      const r = await a2a(server.url, a.token, 'alpha').call('GetTask', { tenant, id: mine.id });
      assert.equal(r.result?.id, mine.id, JSON.stringify(r));
    }
    const v03 = await a2a(server.url, a.token, 'alpha', V03).call('tasks/get', { tenant: 'beta', id: mine.id });
    assert.equal(v03.result?.id, mine.id, JSON.stringify(v03));
  });

  it('HTTP+JSON: a /{tenant}/… prefix, a body or a query naming another agent → byte for byte a missing agent', async () => {
    const rest = (token: string, path: string, body?: unknown, headers = V1) =>
      fetch(`${server.url}/v1/a2a/agents/${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (r) => `${r.status} ${await r.text()}`);
    const send = sendParams('no', { messageId: 'm-2' });
    for (const other of [...others, { name: 'not an id', id: 'no such agent!', lacking: () => a }]) {
      const x = encodeURIComponent(other.id);
      const lacking = other.lacking().token;
      const pairs: [string, string][] = [
        [await rest(a.token, `alpha/${x}/tasks/${mine.id}`), await rest(lacking, `${x}/tasks/${mine.id}`)],
        [await rest(a.token, `alpha/${x}/tasks`), await rest(lacking, `${x}/tasks`)],
        [await rest(a.token, `alpha/tasks?tenant=${x}`), await rest(lacking, `${x}/tasks`)],
        [await rest(a.token, `alpha/${x}/extendedAgentCard`), await rest(lacking, `${x}/extendedAgentCard`)],
        [await rest(a.token, `alpha/${x}/message:send`, send), await rest(lacking, `${x}/message:send`, send)],
        [
          await rest(a.token, 'alpha/message:send', { ...send, tenant: other.id }),
          await rest(lacking, `${x}/message:send`, send),
        ],
        // The right prefix does not excuse a wrong tenant in the body.
        [
          await rest(a.token, 'alpha/alpha/message:send', { ...send, tenant: other.id }),
          await rest(lacking, `${x}/message:send`, send),
        ],
      ];
      for (const [i, [named, missing]] of pairs.entries()) {
        assert.equal(named, missing, `#${i}, ${other.name}`);
        assert.match(named, /^404 .*"TASK_NOT_FOUND"/);
      }
    }
    // The agent's own id as the prefix (and in the body): served as without one.
    assert.match(await rest(a.token, `alpha/alpha/tasks/${mine.id}`), new RegExp(`^200 .*"id":"${mine.id}"`));
    assert.match(await rest(a.token, `alpha/alpha/tasks?tenant=alpha`), /^200 .*"totalSize"/);
    assert.match(await rest(a.token, 'alpha/alpha/message:send', { ...sendParams('ok'), tenant: 'alpha' }), /^200 /);
    // v0.3 (no A2A-Version) has no tenant, and no prefixed routes: unchanged.
    assert.match(await rest(a.token, `alpha/alpha/tasks/${mine.id}`, undefined, V03), /^404 .*"METHOD_NOT_FOUND"/);
    assert.match(await rest(a.token, `alpha/tasks/${mine.id}`, undefined, V03), /^200 /);
  });

  it("gRPC: a tenant naming another of the caller's agents finds only that agent's tasks", async () => {
    const client = await sdkClient(server, a.token, 'alpha', 'GRPC', []);
    const theirs = await failure(client.transport.getTask({ tenant: 'beta', id: mine.id }, ASK_V1));
    const missing = randomUUID();
    const none = await failure(client.transport.getTask({ tenant: 'beta', id: missing }, ASK_V1));
    assert.deepEqual(
      { ...theirs, message: theirs.message.replace(mine.id, 'ID') },
      {
        ...none,
        message: none.message.replace(missing, 'ID'),
      },
    );
    assert.equal(theirs.reason, 'TASK_NOT_FOUND');
  });
});
