import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type StreamResponse,
  type Task,
  TaskState,
  GetTaskRequest,
  CancelTaskRequest,
  ListTasksRequest,
  SubscribeToTaskRequest,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { Barrier } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { authFetch, textMessage, v03Client, v1Client, waitFor } from '../helpers/a2a.js';

function code(err: unknown): number | undefined {
  const e = err as { envelopeCode?: number; code?: number };
  return e.envelopeCode ?? e.code;
}

async function rejectsWith(p: Promise<unknown>, expected: number): Promise<Error> {
  try {
    await p;
  } catch (err) {
    assert.equal(code(err), expected, `expected JSON-RPC ${expected}, got ${String(err)}`);
    return err as Error;
  }
  assert.fail(`expected JSON-RPC error ${expected}`);
}

function text(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')))
    .join('');
}

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

describe('A2A interop with the official @a2a-js/sdk client', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let client: Client;
  let fake: FakeProvider;
  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    server = await startTestServer({
      env: { ARBITER_ECHO_DELAY_MS: '20', OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_API_KEY: 'sk-test-interop-0001' },
    });
    a = await newTenant(server, 'interop-a');
    b = await newTenant(server, 'interop-b');
    await newAgent(a, {
      id: 'echoer',
      role: 'echo agent',
      goal: 'repeat things',
      capabilities: ['/fetch', 'repetition'],
    });
    client = await v1Client(server.url, a.token, 'echoer');
  });
  after(async () => {
    await server.close();
    await fake.stop();
  });

  describe('v1.0 client (§3.1 operations)', () => {
    it('resolves the card through ClientFactory and speaks v1.0', async () => {
      assert.equal(client.protocolVersion, '1.0');
      const card = await client.getAgentCard();
      assert.equal(card.name, 'echoer');
      assert.equal(card.description, 'echo agent — repeat things');
      assert.equal(card.capabilities?.streaming, true);
      assert.equal(card.capabilities?.pushNotifications, true);
      assert.deepEqual(
        card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
        [
          [`${server.url}/v1/a2a/agents/echoer`, 'JSONRPC', '1.0'],
          [`${server.url}/v1/a2a/agents/echoer`, 'JSONRPC', '0.3'],
          [`${server.url}/v1/a2a/agents/echoer`, 'HTTP+JSON', '1.0'],
        ],
      );
      assert.ok(card.securitySchemes.bearer?.scheme?.$case === 'httpAuthSecurityScheme');
      assert.deepEqual(
        card.skills.map((s) => s.id),
        ['chat', 'fetch-url', 'repetition'],
      );
    });

    it("a client that knows only the server's address: the public card, read without a token, leads to the caller's index", async () => {
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch(b.token) })],
          cardResolver: new DefaultAgentCardResolver({ fetchImpl: fetch }),
        }),
      );
      const root = await factory.createFromUrl(server.url); // /.well-known/agent-card.json
      // The public card says an extended one exists: the client asks the interface for it, which is the token's index.
      assert.equal((await root.getAgentCard()).name, 'index');
      const res = await root.sendMessage(textMessage('hello, whoever you are'));
      assert.ok('status' in res, 'a Task');
      assert.equal(res.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(text(res), 'hello, whoever you are');
      assert.equal(res.metadata?.['x-arbiter.agent_id'], 'index');
      // The task is the caller's tenant's, and only its.
      const get = (tenant: TestTenant) =>
        tenant.client.post(
          '/v1/a2a/agents/index',
          { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: res.id } },
          {
            'a2a-version': '1.0',
          },
        );
      assert.equal((await get(b)).body.result?.id, res.id);
      assert.equal((await get(a)).body.error?.code, -32001);
    });

    it('SendMessage blocks until the task completes and returns it', async () => {
      const res = await client.sendMessage(textMessage('hello from the sdk'));
      assert.ok('status' in res, 'a Task');
      const task = res;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(text(task), 'hello from the sdk');
      assert.equal(task.history.length, 2);
      assert.equal(task.history[1]?.parts[0]?.content?.$case, 'text');
      assert.equal(task.metadata?.['x-arbiter.agent_id'], 'echoer');
      assert.ok(Number(task.metadata?.['x-arbiter.output_tokens']) > 0);
      assert.ok(task.contextId.length > 0);
    });

    it('returnImmediately returns a running task; GetTask later sees it completed', async () => {
      const res = (await client.sendMessage(
        textMessage('one two three four five six', { returnImmediately: true }),
      )) as Task;
      assert.ok(
        [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(res.status!.state),
        `state ${res.status?.state}`,
      );
      const done = await waitFor(async () => {
        const t = await client.getTask(GetTaskRequest.fromJSON({ id: res.id }));
        return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
      });
      assert.equal(text(done), 'one two three four five six');
    });

    it('keeps the contextId it is given', async () => {
      const res = (await client.sendMessage(textMessage('ctx', { contextId: 'my-context-1' }))) as Task;
      assert.equal(res.contextId, 'my-context-1');
    });

    it('SendStreamingMessage: the Task first, text as it is produced, then the terminal status', async () => {
      // The model sends its first piece, and the rest only once the client has received text: were the stream
      // batched until the run ends, no text could arrive first (the barrier gives up, `met` stays false).
      const textSeen = new Barrier(1);
      fake.scripts.set('streamer', () => ({
        text: 'alpha beta gamma delta epsilon zeta eta theta',
        continueWhen: textSeen.reached,
      }));
      await newAgent(a, { id: 'streamer', model: 'openai/streamer' });
      const streamer = await v1Client(server.url, a.token, 'streamer');
      const events: StreamResponse[] = [];
      for await (const e of streamer.sendMessageStream(textMessage('stream it'))) {
        events.push(e);
        if (e.payload?.$case === 'artifactUpdate') void textSeen.arrive();
      }
      assert.equal(events[0]?.payload?.$case, 'task');
      const chunks = events.filter((e) => e.payload?.$case === 'artifactUpdate');
      assert.ok(chunks.length >= 3, `${chunks.length} artifact updates`);
      const last = events[events.length - 1];
      assert.equal(last?.payload?.$case, 'statusUpdate');
      assert.equal(
        last?.payload?.$case === 'statusUpdate' && last.payload.value.status?.state,
        TaskState.TASK_STATE_COMPLETED,
      );
      const joined = chunks
        .map((c) =>
          c.payload?.$case === 'artifactUpdate'
            ? c.payload.value.artifact?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')
            : '',
        )
        .join('');
      assert.equal(joined, 'alpha beta gamma delta epsilon zeta eta theta');
      assert.ok(textSeen.met, 'streamed, not batched: text reached the client while the model was still answering');
      const lastChunk = chunks[chunks.length - 1];
      assert.ok(lastChunk.payload?.$case === 'artifactUpdate' && lastChunk.payload.value.lastChunk);
    });

    it('historyLength is honoured on send and get (§3.2.4)', async () => {
      const t0 = (await client.sendMessage(textMessage('history', { historyLength: 0 }))) as Task;
      assert.equal(t0.history.length, 0);
      const t1 = (await client.sendMessage(textMessage('history', { historyLength: 1 }))) as Task;
      assert.equal(t1.history.length, 1);
      assert.equal(t1.history[0]?.role, 2 /* ROLE_AGENT: the most recent */);
      const g = await client.getTask(GetTaskRequest.fromJSON({ id: t1.id, historyLength: 1 }));
      assert.equal(g.history.length, 1);
      const all = await client.getTask(GetTaskRequest.fromJSON({ id: t1.id }));
      assert.equal(all.history.length, 2);
    });

    it('ListTasks filters by context and state, pages with nextPageToken, newest first', async () => {
      const ctx = `list-ctx-${Date.now()}`;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(((await client.sendMessage(textMessage(`item ${i}`, { contextId: ctx }))) as Task).id);
      const seen: string[] = [];
      let pageToken = '';
      do {
        const page = await client.listTasks(ListTasksRequest.fromJSON({ contextId: ctx, pageSize: 2, pageToken }));
        assert.equal(page.totalSize, 3);
        seen.push(...page.tasks.map((t) => t.id));
        for (const t of page.tasks) assert.equal(t.artifacts.length, 0, 'no artifacts unless includeArtifacts');
        pageToken = page.nextPageToken;
      } while (pageToken);
      assert.deepEqual(seen, [...ids].reverse());
      const withArtifacts = await client.listTasks(
        ListTasksRequest.fromJSON({ contextId: ctx, includeArtifacts: true }),
      );
      assert.equal(text(withArtifacts.tasks[0]), 'item 2');
      const completed = await client.listTasks(
        ListTasksRequest.fromJSON({ contextId: ctx, status: 'TASK_STATE_CANCELED' }),
      );
      assert.equal(completed.tasks.length, 0);
      assert.equal(completed.nextPageToken, '');
    });

    it('CancelTask ends a running task canceled once; the blocking send returns that task', async () => {
      const blocking = client.sendMessage(textMessage('hold'));
      const list = await waitFor(async () => {
        const l = await client.listTasks(ListTasksRequest.fromJSON({ status: 'TASK_STATE_WORKING' }));
        return l.tasks[0];
      });
      const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: list.id }));
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const result = (await blocking) as Task;
      assert.equal(result.id, list.id);
      assert.equal(result.status?.state, TaskState.TASK_STATE_CANCELED);
      await rejectsWith(client.cancelTask(CancelTaskRequest.fromJSON({ id: list.id })), -32002);
    });

    it('SubscribeToTask from a second client: current Task first, live events, closes at terminal', async () => {
      const second = await v1Client(server.url, a.token, 'echoer');
      const t = (await client.sendMessage(textMessage('hold', { returnImmediately: true }))) as Task;
      await waitFor(async () =>
        (await client.getTask(GetTaskRequest.fromJSON({ id: t.id }))).status?.state === TaskState.TASK_STATE_WORKING
          ? true
          : undefined,
      );
      const events: StreamResponse[] = [];
      const sub = (async () => {
        for await (const e of second.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: t.id }))) events.push(e);
      })();
      await waitFor(async () => (events.length > 0 ? true : undefined));
      await client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
      await sub;
      assert.equal(events[0]?.payload?.$case, 'task');
      const last = events[events.length - 1];
      assert.ok(
        last?.payload?.$case === 'statusUpdate' && last.payload.value.status?.state === TaskState.TASK_STATE_CANCELED,
      );
      // Subscribing to a terminal task is an UnsupportedOperationError.
      await rejectsWith(collect(second.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: t.id }))), -32004);
    });

    it('continues an input-required task and a working one', async () => {
      const asked = (await client.sendMessage(textMessage('ask'))) as Task;
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const answered = (await client.sendMessage(textMessage('the answer', { taskId: asked.id }))) as Task;
      assert.equal(answered.id, asked.id);
      assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(text(answered), 'the answer');
      assert.equal(answered.history.length, 4);

      const held = (await client.sendMessage(textMessage('hold', { returnImmediately: true }))) as Task;
      const released = (await client.sendMessage(textMessage('released now', { taskId: held.id }))) as Task;
      assert.equal(released.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(text(released), 'released now');
      // A terminal task takes no more messages.
      await rejectsWith(client.sendMessage(textMessage('again', { taskId: held.id })), -32004);
    });

    it('two concurrent continuations of an input-required task: one run, both answered, nothing lost', async () => {
      const asked = (await client.sendMessage(textMessage('ask'))) as Task;
      const [r1, r2] = await Promise.all([
        client.sendMessage(textMessage('first answer', { taskId: asked.id })),
        client.sendMessage(textMessage('second answer', { taskId: asked.id })),
      ]);
      for (const r of [r1, r2]) assert.equal((r as Task).status?.state, TaskState.TASK_STATE_COMPLETED);
      const final = await client.getTask(GetTaskRequest.fromJSON({ id: asked.id }));
      const texts = final.history.map(
        (m) => `${m.role}:${m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')}`,
      );
      assert.equal(final.history.length, 6, texts.join(' | '));
      for (const answer of ['first answer', 'second answer']) {
        assert.equal(texts.filter((t) => t === `1:${answer}`).length, 1, `user message ${answer}`);
        assert.equal(texts.filter((t) => t === `2:${answer}`).length, 1, `reply to ${answer}`);
      }
    });

    it('error cases carry the spec codes', async () => {
      await rejectsWith(client.getTask(GetTaskRequest.fromJSON({ id: 'no-such-task' })), -32001);
      await rejectsWith(client.cancelTask(CancelTaskRequest.fromJSON({ id: 'no-such-task' })), -32001);
      await rejectsWith(client.sendMessage(textMessage('x', { taskId: 'no-such-task' })), -32001);
      // Called on the transport, the A2A-Version header the client adds must be given by hand.
      const v1 = { serviceParameters: { 'A2A-Version': '1.0' } };
      await rejectsWith(
        client.transport.createTaskPushNotificationConfig(
          {
            tenant: '',
            id: 'c',
            taskId: 't',
            url: 'http://192.0.2.1/hook',
            token: '',
            authentication: undefined,
          },
          v1,
        ),
        -32001,
      );
      // §3.1.11: the card says extendedAgentCard: true, and the extended card answers.
      const extended = await client
        .getAgentCard({})
        .then(() => client.transport.getExtendedAgentCard({ tenant: '' }, v1));
      assert.equal(extended.capabilities?.extendedAgentCard, true);
      assert.ok(extended.skills.some((s) => s.id === 'fetch-url' && /web pages/.test(s.description)));
    });

    it("another tenant's task answers exactly like an unknown one, on every method", async () => {
      const mine = (await client.sendMessage(textMessage('private'))) as Task;
      const other = await v1Client(server.url, b.token, 'echoer').catch((e: unknown) => e);
      // b has no agent 'echoer': the card itself is a 404 for b.
      assert.ok(other instanceof Error);
      const bIndex = await v1Client(server.url, b.token, 'index');
      const messages: string[] = [];
      for (const call of [
        () => bIndex.getTask(GetTaskRequest.fromJSON({ id: mine.id })),
        () => bIndex.cancelTask(CancelTaskRequest.fromJSON({ id: mine.id })),
        () => collect(bIndex.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: mine.id }))),
        () => bIndex.sendMessage(textMessage('sneak', { taskId: mine.id })),
      ]) {
        const err = await rejectsWith(call(), -32001);
        messages.push(err.message.replace(mine.id, 'ID'));
      }
      const unknown = await rejectsWith(bIndex.getTask(GetTaskRequest.fromJSON({ id: 'unknown-id' })), -32001);
      assert.equal(messages[0], unknown.message.replace('unknown-id', 'ID'));
      const list = await bIndex.listTasks(ListTasksRequest.fromJSON({}));
      assert.ok(!list.tasks.some((t) => t.id === mine.id));
      // Nor does a's other agent see it: tasks are scoped to their agent too.
      const aIndex = await v1Client(server.url, a.token, 'index');
      await rejectsWith(aIndex.getTask(GetTaskRequest.fromJSON({ id: mine.id })), -32001);
    });
  });

  describe('v0.3 compat client', () => {
    it('send, stream, get, cancel and resubscribe over the v0.3 wire', async () => {
      const legacy = await v03Client(server.url, a.token, 'echoer');
      const res = (await legacy.sendMessage(textMessage('legacy hello'))) as Task;
      assert.equal(res.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(text(res), 'legacy hello');

      const events = await collect(legacy.sendMessageStream(textMessage('legacy streamed words here')));
      const last = events[events.length - 1];
      assert.ok(
        last?.payload?.$case === 'statusUpdate' && last.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED,
      );
      const chunks = events.filter((e) => e.payload?.$case === 'artifactUpdate');
      assert.ok(chunks.length >= 2);

      const got = await legacy.getTask(GetTaskRequest.fromJSON({ id: res.id }));
      assert.equal(got.id, res.id);

      const held = (await legacy.sendMessage(textMessage('hold', { returnImmediately: true }))) as Task;
      const resub: StreamResponse[] = [];
      const watching = (async () => {
        for await (const e of legacy.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: held.id }))) resub.push(e);
      })();
      await waitFor(async () => (resub.length > 0 ? true : undefined));
      const canceled = await legacy.cancelTask(CancelTaskRequest.fromJSON({ id: held.id }));
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      await watching;
      const end = resub[resub.length - 1];
      assert.ok(
        end?.payload?.$case === 'statusUpdate' && end.payload.value.status?.state === TaskState.TASK_STATE_CANCELED,
      );
      await rejectsWith(legacy.getTask(GetTaskRequest.fromJSON({ id: 'nope' })), -32001);
    });
  });
});
