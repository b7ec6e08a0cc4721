// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SendMessageRequest, type Task } from '@a2a-js/sdk';
import { DataSource } from 'typeorm';
import type { Client } from '@a2a-js/sdk/client';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { a2a, readSse, type RpcReply, V1, v1Client, waitFor } from '../helpers/a2a.js';
import { acceptedInOrder, WebhookReceiver, type Delivery } from '../helpers/webhook-receiver.js';

const CRED = 'cred-s3cret-value';
const TOKEN = 'tok-s3cret-value';

/** The seqs of a task's log events that the spec pushes (status and artifact updates), from the native API. */
async function pushableSeqs(server: TestServer, token: string, taskId: string): Promise<number[]> {
  const res = await fetch(`${server.url}/v1/requests/${taskId}/events?format=log`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const { events } = await readSse(res);
  return events.filter((e) => e.event === 'status' || e.event === 'artifact').map((e) => Number(e.id));
}

async function deliveries(server: TestServer, token: string, taskId: string): Promise<any[]> {
  const res = await server.as(token).get(`/v1/requests/${taskId}/push-configs`);
  assert.equal(res.status, 200);
  return res.body.items as any[];
}

const message = (text: string, configuration: Record<string, unknown> = {}) => ({
  message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
  configuration,
});

/** One call on the index agent (v1.0 unless `headers` say otherwise); every reply here is HTTP 200. */
async function call(
  server: TestServer,
  token: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = V1,
): Promise<RpcReply> {
  const res = await a2a(server.url, token, 'index', headers).post(method, params);
  assert.equal(res.status, 200);
  return (await res.json()) as RpcReply;
}

/** Waits until the receiver has accepted every pushable event of the (finished) task. */
async function receivedAll(server: TestServer, token: string, taskId: string, receiver: WebhookReceiver) {
  return waitFor(async () => {
    const task = await server.as(token).get(`/v1/requests/${taskId}`);
    if (task.body.state !== 'completed') return undefined;
    const expected = await pushableSeqs(server, token, taskId);
    const got = acceptedInOrder(receiver.accepted.filter((d) => bodyTask(d) === taskId)).seqs;
    return got.length >= expected.length ? { expected, got } : undefined;
  });
}

function bodyTask(d: Delivery): string | undefined {
  const b = d.body;
  return b?.statusUpdate?.taskId ?? b?.artifactUpdate?.taskId ?? b?.taskId;
}

describe('push notifications (spec §3.1.7–3.1.10, §4.3)', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let client: Client;
  const receiver = new WebhookReceiver();

  before(async () => {
    await receiver.start();
    server = await startTestServer({
      env: {
        ARBITER_ECHO_DELAY_MS: '10',
        ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
        ARBITER_PUSH_POLL_MS: '100',
        ARBITER_PUSH_BACKOFF_BASE_MS: '50',
        ARBITER_PUSH_BACKOFF_MAX_MS: '200',
        ARBITER_PUSH_MAX_ATTEMPTS: '1000',
      },
    });
    a = await newTenant(server, 'push-a');
    b = await newTenant(server, 'push-b');
    await newAgent(b, { id: 'other', model: 'echo' });
    client = await v1Client(server.url, a.token);
  });
  after(async () => {
    await server?.close();
    await receiver.stop();
  });

  describe('§3.1.7–3.1.10 config CRUD', () => {
    it('the official v1.0 client creates, reads, lists and deletes configs; no read carries a secret', async () => {
      const card = await client.getAgentCard();
      assert.equal(card.capabilities?.pushNotifications, true);
      const task = (await client.sendMessage(
        SendMessageRequest.fromJSON(message('hello', { returnImmediately: true })),
      )) as Task;
      const created = await client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'c1',
        taskId: task.id,
        url: receiver.url,
        token: TOKEN,
        authentication: { scheme: 'Bearer', credentials: CRED },
      });
      assert.equal(created.id, 'c1');
      assert.equal(created.taskId, task.id);
      assert.equal(created.url, receiver.url);
      assert.equal(created.authentication?.scheme, 'Bearer');
      assert.equal(created.authentication?.credentials, '');
      assert.equal(created.token, '');
      const second = await client.createTaskPushNotificationConfig({
        tenant: '',
        id: '',
        taskId: task.id,
        url: receiver.url,
        token: '',
        authentication: undefined,
      });
      assert.match(second.id, /^[0-9a-f-]{36}$/, 'a server-assigned id');
      const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c1' });
      assert.deepEqual(got, created);
      const listed = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: task.id,
        pageSize: 0,
        pageToken: '',
      });
      assert.deepEqual(
        listed.configs.map((c) => c.id),
        ['c1', second.id],
      );
      assert.equal(listed.nextPageToken, '');
      // Raw reads, and the native view: the secrets appear nowhere.
      for (const raw of [
        JSON.stringify(await call(server, a.token, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'c1' })),
        JSON.stringify(await call(server, a.token, 'ListTaskPushNotificationConfigs', { taskId: task.id })),
        JSON.stringify(await call(server, a.token, 'tasks/pushNotificationConfig/list', { id: task.id }, {})),
        JSON.stringify(await deliveries(server, a.token, task.id)),
      ]) {
        assert.ok(!raw.includes(CRED) && !raw.includes(TOKEN), raw);
      }
      const native = (await deliveries(server, a.token, task.id)).find((d) => d.id === 'c1');
      assert.deepEqual(native.authentication, { scheme: 'Bearer', credentials_set: true });
      assert.equal(native.token_set, true);
      // Delete is idempotent; the config is then gone.
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c1' });
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'c1' });
      const gone = await call(server, a.token, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'c1' });
      assert.equal(gone.error?.code, -32001);
      const left = await call(server, a.token, 'ListTaskPushNotificationConfigs', { taskId: task.id });
      assert.deepEqual(
        left.result.configs.map((c: any) => c.id),
        [second.id],
      );
    });

    it('v0.3 methods: set/get/list/delete in v0.3 shapes (schemes list; no credentials, no token)', async () => {
      const task = await call(
        server,
        a.token,
        'message/send',
        {
          message: {
            kind: 'message',
            messageId: crypto.randomUUID(),
            role: 'user',
            parts: [{ kind: 'text', text: 'x' }],
          },
        },
        {},
      );
      const taskId = task.result.id as string;
      const set = await call(
        server,
        a.token,
        'tasks/pushNotificationConfig/set',
        {
          taskId,
          pushNotificationConfig: {
            url: receiver.url,
            token: TOKEN,
            authentication: { schemes: ['Bearer', 'Basic'], credentials: CRED },
          },
        },
        {},
      );
      assert.deepEqual(set.result, {
        taskId,
        pushNotificationConfig: { id: taskId, url: receiver.url, authentication: { schemes: ['Bearer'] } },
      });
      const got = await call(server, a.token, 'tasks/pushNotificationConfig/get', { id: taskId }, {});
      assert.deepEqual(got.result, set.result);
      const listed = await call(server, a.token, 'tasks/pushNotificationConfig/list', { id: taskId }, {});
      assert.deepEqual(listed.result, [set.result]);
      const del = await call(
        server,
        a.token,
        'tasks/pushNotificationConfig/delete',
        {
          id: taskId,
          pushNotificationConfigId: taskId,
        },
        {},
      );
      assert.equal(del.result, null);
      assert.deepEqual(
        (await call(server, a.token, 'tasks/pushNotificationConfig/list', { id: taskId }, {})).result,
        [],
      );
    });

    it('REST without A2A-Version (v0.3 shapes): every push-config route serves the task’s owner; others get "not found"', async () => {
      const rest = a.client;
      const base = '/v1/a2a/agents/index/tasks';
      const sent = await rest.post(`/v1/a2a/agents/index/message:send`, {
        message: {
          kind: 'message',
          messageId: crypto.randomUUID(),
          role: 'user',
          parts: [{ kind: 'text', text: 'x' }],
        },
      });
      assert.equal(sent.status, 200, sent.text);
      const taskId = sent.body.id as string;
      const configs = `${base}/${taskId}/pushNotificationConfigs`;
      const config = {
        pushNotificationConfig: {
          id: 'c1',
          url: receiver.url,
          token: TOKEN,
          authentication: { schemes: ['Bearer'], credentials: CRED },
        },
      };
      const set = await rest.post(configs, config);
      assert.equal(set.status, 200, set.text);
      const expected = {
        taskId,
        pushNotificationConfig: { id: 'c1', url: receiver.url, authentication: { schemes: ['Bearer'] } },
      };
      assert.deepEqual(set.body, expected);
      const got = await rest.get(`${configs}/c1`);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, expected);
      const listed = await rest.get(configs);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.body, [expected], 'v0.3 lists a bare array');
      for (const raw of [set.text, got.text, listed.text]) assert.ok(!raw.includes(CRED) && !raw.includes(TOKEN), raw);
      // Another tenant's task answers like a missing one on every route.
      for (const [method, path] of [
        ['GET', configs],
        ['GET', `${configs}/c1`],
        ['DELETE', `${configs}/c1`],
      ] as const) {
        const theirs = await b.client.request(method, path.replace('/index/', '/other/'));
        const missing = await b.client.request(method, path.replace('/index/', '/other/').replace(taskId, 'nope'));
        assert.equal(theirs.status, 404, `${method} ${path}: ${theirs.text}`);
        assert.equal(theirs.body.error.message.replace(taskId, 'ID'), missing.body.error.message.replace('nope', 'ID'));
      }
      const deleted = await rest.delete(`${configs}/c1`);
      assert.equal(deleted.status, 204, deleted.text);
      assert.equal((await rest.delete(`${configs}/c1`)).status, 204, 'idempotent');
      assert.equal((await rest.get(`${configs}/c1`)).status, 404);
      assert.deepEqual((await rest.get(configs)).body, []);
    });

    it("another tenant's task answers exactly like a missing one, on every method", async () => {
      const mine = (await client.sendMessage(SendMessageRequest.fromJSON(message('private')))) as Task;
      await call(server, a.token, 'CreateTaskPushNotificationConfig', { taskId: mine.id, id: 'p', url: receiver.url });
      const cases: [string, (id: string) => unknown, Record<string, string>][] = [
        ['CreateTaskPushNotificationConfig', (id) => ({ taskId: id, id: 'p', url: receiver.url }), V1],
        ['GetTaskPushNotificationConfig', (id) => ({ taskId: id, id: 'p' }), V1],
        ['ListTaskPushNotificationConfigs', (id) => ({ taskId: id }), V1],
        ['DeleteTaskPushNotificationConfig', (id) => ({ taskId: id, id: 'p' }), V1],
        ['tasks/pushNotificationConfig/get', (id) => ({ id }), {}],
        ['tasks/pushNotificationConfig/list', (id) => ({ id }), {}],
      ];
      for (const [method, params, headers] of cases) {
        const theirs = await call(server, b.token, method, params(mine.id), headers);
        const missing = await call(server, b.token, method, params('no-such-task'), headers);
        assert.equal(theirs.error?.code, -32001, method);
        assert.equal(
          theirs.error?.message.replace(mine.id, 'ID'),
          missing.error?.message.replace('no-such-task', 'ID'),
        );
      }
      // And it is still there for its owner.
      const still = await call(server, a.token, 'GetTaskPushNotificationConfig', { taskId: mine.id, id: 'p' });
      assert.equal(still.result.id, 'p');
      const native = await server.as(b.token).get(`/v1/requests/${mine.id}/push-configs`);
      assert.equal(native.status, 404);
    });

    it('16 configs a task: a 17th is -32602; a message continuing it with one more is refused before it is taken; another tenant gets "not found"', async () => {
      const asked = await call(server, a.token, 'SendMessage', message('ask'));
      const task = asked.result.task;
      assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
      for (let i = 0; i < 16; i++) {
        const r = await call(server, a.token, 'CreateTaskPushNotificationConfig', {
          taskId: task.id,
          id: `c${i}`,
          url: receiver.url,
        });
        assert.equal(r.result?.id, `c${i}`, JSON.stringify(r));
      }
      const extra = await call(server, a.token, 'CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: 'c16',
        url: receiver.url,
      });
      assert.equal(extra.error?.code, -32602);
      // Replacing one of the 16 is fine.
      const again = await call(server, a.token, 'CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: 'c3',
        url: receiver.url,
      });
      assert.equal(again.result?.id, 'c3');
      // The answer with a 17th config: refused, and the task has not taken the message.
      const before = (await server.as(a.token).get(`/v1/requests/${task.id}`)).body;
      const answer = await call(server, a.token, 'SendMessage', {
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', taskId: task.id, parts: [{ text: 'an answer' }] },
        configuration: { taskPushNotificationConfig: { url: receiver.url } },
      });
      assert.equal(answer.error?.code, -32602, JSON.stringify(answer));
      await new Promise((r) => setTimeout(r, 200));
      const after = (await server.as(a.token).get(`/v1/requests/${task.id}`)).body;
      assert.equal(after.state, 'input-required');
      assert.equal(after.last_seq, before.last_seq, 'nothing was written to the task');
      // Another tenant setting a config on the full task: exactly like a task that does not exist.
      const theirs = await call(server, b.token, 'CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: 'x',
        url: receiver.url,
      });
      const missing = await call(server, b.token, 'CreateTaskPushNotificationConfig', {
        taskId: 'no-such-task',
        id: 'x',
        url: receiver.url,
      });
      assert.equal(theirs.error?.code, -32001, JSON.stringify(theirs));
      assert.equal(theirs.error?.message.replace(task.id, 'ID'), missing.error?.message.replace('no-such-task', 'ID'));
    });

    it('bad input on each method is -32602 naming the field, and stores nothing', async () => {
      const task = (await client.sendMessage(SendMessageRequest.fromJSON(message('bad input')))) as Task;
      const t = task.id;
      const bad: [string, unknown, string, Record<string, string>][] = [
        ['CreateTaskPushNotificationConfig', { url: receiver.url }, 'params.taskId', V1],
        ['CreateTaskPushNotificationConfig', { taskId: t }, 'params.url', V1],
        ['CreateTaskPushNotificationConfig', { taskId: t, url: 42 }, 'params.url', V1],
        ['CreateTaskPushNotificationConfig', { taskId: t, url: 'not a url' }, 'params.url', V1],
        ['CreateTaskPushNotificationConfig', { taskId: t, url: 'ftp://127.0.0.1/x' }, 'params.url', V1],
        [
          'CreateTaskPushNotificationConfig',
          { taskId: t, url: receiver.url, authentication: { scheme: 'Bear er' } },
          'params.authentication.scheme',
          V1,
        ],
        [
          'CreateTaskPushNotificationConfig',
          { taskId: t, url: receiver.url, authentication: { credentials: 'x' } },
          'params.authentication.scheme',
          V1,
        ],
        [
          'CreateTaskPushNotificationConfig',
          { taskId: t, url: receiver.url, authentication: { scheme: 'Bearer', credentials: 'a\r\nX-Evil: 1' } },
          'params.authentication.credentials',
          V1,
        ],
        ['CreateTaskPushNotificationConfig', { taskId: t, url: receiver.url, token: 'a\nb' }, 'params.token', V1],
        [
          'CreateTaskPushNotificationConfig',
          { taskId: t, url: receiver.url, authentication: 'Bearer x' },
          'params.authentication',
          V1,
        ],
        ['GetTaskPushNotificationConfig', { taskId: t }, 'params.id', V1],
        ['GetTaskPushNotificationConfig', { id: 'c' }, 'params.taskId', V1],
        ['ListTaskPushNotificationConfigs', { taskId: t, pageToken: 'forged' }, 'params.pageToken', V1],
        ['ListTaskPushNotificationConfigs', { taskId: t, pageSize: -1 }, 'params.pageSize', V1],
        ['DeleteTaskPushNotificationConfig', { taskId: t }, 'params.id', V1],
        ['tasks/pushNotificationConfig/set', { taskId: t }, 'params.pushNotificationConfig', {}],
        [
          'tasks/pushNotificationConfig/set',
          { taskId: t, pushNotificationConfig: { url: receiver.url, authentication: { credentials: 'x' } } },
          'params.pushNotificationConfig.authentication.schemes',
          {},
        ],
        ['tasks/pushNotificationConfig/get', {}, 'params.id', {}],
        ['tasks/pushNotificationConfig/delete', { id: t }, 'params.pushNotificationConfigId', {}],
        [
          'SendMessage',
          message('x', { taskPushNotificationConfig: { url: 7 } }),
          'params.configuration.taskPushNotificationConfig.url',
          V1,
        ],
        [
          'message/send',
          {
            message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] },
            configuration: { pushNotificationConfig: {} },
          },
          'params.configuration.pushNotificationConfig.url',
          {},
        ],
      ];
      for (const [method, params, field, headers] of bad) {
        const r = await call(server, a.token, method, params, headers);
        assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r)}`);
        assert.ok(r.error?.message.includes(field), `${method}: '${r.error?.message}' names ${field}`);
      }
      assert.deepEqual(await deliveries(server, a.token, t), []);
    });
  });

  describe('§4.3.3 delivery', () => {
    it('a receiver gets every status and artifact update of the task, in log order, with its authentication', async () => {
      const sent = await call(
        server,
        a.token,
        'SendMessage',
        message('one two three four five six', {
          taskPushNotificationConfig: {
            url: receiver.url,
            token: TOKEN,
            authentication: { scheme: 'Bearer', credentials: CRED },
          },
        }),
      );
      const taskId = sent.result.task.id as string;
      const { expected, got } = await receivedAll(server, a.token, taskId, receiver);
      assert.deepEqual(got, expected, 'every pushable event, in order, from the first status');
      const mine = receiver.accepted.filter((d) => bodyTask(d) === taskId);
      for (const d of mine) {
        assert.equal(d.headers.authorization, `Bearer ${CRED}`);
        assert.equal(d.headers['x-a2a-notification-token'], TOKEN);
        assert.equal(d.headers['content-type'], 'application/a2a+json');
        assert.match(d.deliveryId, /^[0-9a-f-]{36}:\d+$/);
      }
      const states = mine.filter((d) => d.body.statusUpdate).map((d) => d.body.statusUpdate.status.state);
      assert.equal(states[0], 'TASK_STATE_SUBMITTED');
      assert.equal(states.at(-1), 'TASK_STATE_COMPLETED');
      const text = mine
        .filter((d) => d.body.artifactUpdate)
        .map((d) => d.body.artifactUpdate.artifact.parts.map((p: any) => p.text ?? '').join(''))
        .join('');
      assert.ok(text.includes('one two three four five six'), text);
      // The worker records a delivery after the receiver's 2xx: the last one may still be on its way to the table.
      const view = await waitFor(async () => {
        const v = (await deliveries(server, a.token, taskId))[0];
        return v?.delivered_count === expected.length ? v : undefined;
      });
      assert.equal(view.state, 'active');
      assert.equal(view.delivered_seq, view.last_seq);
    });

    it('a new task and the config its message carries are stored together: a config that cannot be stored leaves no task; the resend creates it and pushes from the first status', async () => {
      // The database itself refuses this one config (a fault of the test's own database, not of the code): the
      // task must not be created, run and answered without the webhook it was asked for.
      const ds = server.running.app.get(DataSource);
      await ds.query(`CREATE FUNCTION test_refuse_push() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.url LIKE '%/refused-here' THEN RAISE EXCEPTION 'push config refused by the test'; END IF;
          RETURN NEW;
        END $$`);
      await ds.query(
        'CREATE TRIGGER test_refuse_push BEFORE INSERT ON push_configs FOR EACH ROW EXECUTE FUNCTION test_refuse_push()',
      );
      try {
        const contextId = crypto.randomUUID();
        const params = {
          message: { messageId: crypto.randomUUID(), contextId, role: 'ROLE_USER', parts: [{ text: 'hello once' }] },
          configuration: { taskPushNotificationConfig: { url: `${receiver.url}/refused-here` } },
        };
        const refused = await call(server, a.token, 'SendMessage', params);
        assert.ok(refused.error, JSON.stringify(refused));
        const listed = await call(server, a.token, 'ListTasks', { contextId });
        assert.deepEqual(listed.result?.tasks, [], 'no task was created without its config');

        // The same message again, its webhook one that can be stored: now the task is created, and it is pushed
        // every update from its first status.
        const again = await call(server, a.token, 'SendMessage', {
          ...params,
          configuration: { taskPushNotificationConfig: { url: receiver.url } },
        });
        const taskId = again.result?.task?.id as string;
        assert.ok(taskId, JSON.stringify(again));
        const { expected, got } = await receivedAll(server, a.token, taskId, receiver);
        assert.deepEqual(got, expected, 'every pushable event, in order, from the first status');
        assert.equal((await deliveries(server, a.token, taskId)).length, 1);
        // Sent once more (a client that did not hear the answer): the same task, and still one config.
        const third = await call(server, a.token, 'SendMessage', {
          ...params,
          configuration: { taskPushNotificationConfig: { url: receiver.url } },
        });
        assert.equal(third.result?.task?.id, taskId, JSON.stringify(third));
        assert.equal((await deliveries(server, a.token, taskId)).length, 1, 'the config is not added twice');

        // A message that continues a task, the same: not taken without its config; taken with one that is stored,
        // whose webhook gets the updates from that message on.
        const waiting = (await call(server, a.token, 'SendMessage', message('ask'))).result.task;
        assert.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED');
        const before = (await server.as(a.token).get(`/v1/requests/${waiting.id}`)).body;
        const answer = (url: string) => ({
          message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', taskId: waiting.id, parts: [{ text: 'yes' }] },
          configuration: { taskPushNotificationConfig: { url } },
        });
        const notTaken = await call(server, a.token, 'SendMessage', answer(`${receiver.url}/refused-here`));
        assert.ok(notTaken.error, JSON.stringify(notTaken));
        const after = (await server.as(a.token).get(`/v1/requests/${waiting.id}`)).body;
        assert.equal(after.state, 'input-required');
        assert.equal(after.last_seq, before.last_seq, 'the message was not taken without its config');
        const taken = await call(server, a.token, 'SendMessage', answer(receiver.url));
        assert.equal(taken.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(taken));
        const fromAnswer = (await pushableSeqs(server, a.token, waiting.id)).filter((seq) => seq > before.last_seq);
        const pushed = await waitFor(async () => {
          const { seqs } = acceptedInOrder(receiver.accepted.filter((d) => bodyTask(d) === waiting.id));
          return seqs.length >= fromAnswer.length ? seqs : undefined;
        });
        assert.deepEqual(pushed, fromAnswer, 'the updates from the answer on, in order');
      } finally {
        await ds.query('DROP TRIGGER test_refuse_push ON push_configs');
        await ds.query('DROP FUNCTION test_refuse_push()');
      }
    });

    it('a file a tool wrote reaches the webhook with its bytes (the log holds only a reference)', async () => {
      const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 0xff, 0xfe]);
      // The offline echo model echoes the command, so /write --base64 runs as if a model had written it.
      const sent = await call(
        server,
        a.token,
        'SendMessage',
        message(`here\n/write --base64 img/dot.png\n${bytes.toString('base64')}\n/endwrite`, {
          taskPushNotificationConfig: { url: receiver.url },
        }),
      );
      const taskId = sent.result.task.id as string;
      await receivedAll(server, a.token, taskId, receiver);
      const file = receiver.accepted
        .filter((d) => bodyTask(d) === taskId && d.body.artifactUpdate?.artifact?.name === 'img/dot.png')
        .map((d) => d.body.artifactUpdate.artifact.parts[0])[0];
      assert.deepEqual(file, { raw: bytes.toString('base64'), mediaType: 'image/png', filename: 'img/dot.png' });
    });

    it('v0.3: message/send with pushNotificationConfig pushes v0.3 events, the last one final', async () => {
      const sent = await call(
        server,
        a.token,
        'message/send',
        {
          message: {
            kind: 'message',
            messageId: crypto.randomUUID(),
            role: 'user',
            parts: [{ kind: 'text', text: 'legacy push' }],
          },
          configuration: {
            pushNotificationConfig: { url: receiver.url, authentication: { schemes: ['Basic'], credentials: 'dTpw' } },
          },
        },
        {},
      );
      const taskId = sent.result.id as string;
      const { expected, got } = await receivedAll(server, a.token, taskId, receiver);
      assert.deepEqual(got, expected);
      const mine = receiver.accepted.filter((d) => bodyTask(d) === taskId);
      assert.ok(
        mine.every((d) => d.headers.authorization === 'Basic dTpw' && d.headers['content-type'] === 'application/json'),
      );
      assert.ok(mine.every((d) => d.body.kind === 'status-update' || d.body.kind === 'artifact-update'));
      const last = mine.at(-1)!.body;
      assert.equal(last.kind, 'status-update');
      assert.equal(last.status.state, 'completed');
      assert.equal(last.final, true);
    });

    it('a receiver that is down (503, then refusing connections) gets everything afterwards, in order; repeats only under the same delivery id', async () => {
      receiver.mode = 503;
      const before = receiver.deliveries.length;
      const sent = await call(
        server,
        a.token,
        'SendMessage',
        message('while the receiver is down', {
          taskPushNotificationConfig: { url: receiver.url, id: 'down' },
        }),
      );
      const taskId = sent.result.task.id as string;
      await waitFor(async () => {
        const [d] = await deliveries(server, a.token, taskId);
        return d && d.failures >= 3 ? d : undefined;
      });
      const [failing] = await deliveries(server, a.token, taskId);
      assert.equal(failing.last_error, 'HTTP 503');
      assert.equal(failing.delivered_seq, 0, 'the cursor does not move past a failed delivery');
      await receiver.stop(); // connection refused for a while
      await waitFor(async () => {
        const [d] = await deliveries(server, a.token, taskId);
        return d && /ECONNREFUSED|connection/.test(d.last_error ?? '') ? d : undefined;
      });
      receiver.mode = 'ok';
      await receiver.start();
      const { expected, got } = await receivedAll(server, a.token, taskId, receiver);
      assert.deepEqual(got, expected);
      const mine = receiver.deliveries.slice(before).filter((d) => bodyTask(d) === taskId);
      assert.ok(
        mine.some((d) => d.status === 503),
        'it was tried while down',
      );
      // The first delivery was retried under the same id until it got through.
      const first = mine.filter((d) => d.seq === expected[0]);
      assert.ok(first.length > 1 && new Set(first.map((d) => d.deliveryId)).size === 1);
      const [view] = await deliveries(server, a.token, taskId);
      assert.equal(view.failures, 0);
      assert.equal(view.last_error, null);
    });
  });

  describe('§13.2 SSRF: webhook URLs are checked at config time', () => {
    let strict: TestServer;
    let t: TestTenant;
    before(async () => {
      strict = await startTestServer({ env: { ARBITER_PUSH_ALLOWLIST: `127.0.0.1:${receiver.port}` } });
      t = await newTenant(strict, 'strict');
    });
    after(async () => strict?.close());

    it('private, loopback, link-local (metadata) and reserved targets are refused unless allow-listed; nothing is stored', async () => {
      const sent = await call(strict, t.token, 'SendMessage', message('x', { returnImmediately: true }));
      const taskId = sent.result.task.id as string;
      for (const url of [
        'http://127.0.0.1:9/hook',
        'http://localhost:9/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://[::ffff:169.254.169.254]/',
        'http://10.0.0.1/hook',
        'http://192.168.1.1/hook',
        'http://[::1]:9/hook',
        `http://user:pass@127.0.0.1:${receiver.port}/hook`,
      ]) {
        const r = await call(strict, t.token, 'CreateTaskPushNotificationConfig', { taskId, url });
        assert.equal(r.error?.code, -32602, url);
        assert.match(r.error.message, /params\.url/);
      }
      const blocked = await call(strict, t.token, 'CreateTaskPushNotificationConfig', {
        taskId,
        url: 'http://10.0.0.1/',
      });
      assert.match(blocked.error!.message, /ARBITER_PUSH_ALLOWLIST/);
      assert.deepEqual(await deliveries(strict, t.token, taskId), []);
      // The allow-listed host:port is accepted.
      const ok = await call(strict, t.token, 'CreateTaskPushNotificationConfig', { taskId, url: receiver.url });
      assert.equal(ok.result.url, receiver.url);
    });

    it('SendMessage with a refused webhook is refused before any task exists', async () => {
      const before = (await strict.as(t.token).get('/v1/requests')).body.items.length;
      const r = await call(
        strict,
        t.token,
        'SendMessage',
        message('x', {
          taskPushNotificationConfig: { url: 'http://169.254.169.254/' },
        }),
      );
      assert.equal(r.error?.code, -32602);
      assert.match(r.error.message, /params\.configuration\.taskPushNotificationConfig\.url/);
      assert.equal((await strict.as(t.token).get('/v1/requests')).body.items.length, before);
    });
  });

  describe('dead-letter', () => {
    let fragile: TestServer;
    let t: TestTenant;
    const failing = new WebhookReceiver();
    before(async () => {
      await failing.start();
      fragile = await startTestServer({
        env: {
          ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
          ARBITER_PUSH_POLL_MS: '100',
          ARBITER_PUSH_BACKOFF_BASE_MS: '20',
          ARBITER_PUSH_BACKOFF_MAX_MS: '50',
          ARBITER_PUSH_MAX_ATTEMPTS: '3',
        },
      });
      t = await newTenant(fragile, 'fragile');
    });
    after(async () => {
      await fragile?.close();
      await failing.stop();
    });

    it('after the maximum attempts the config is dead (visible on the native API), and a re-set revives it from its cursor', async () => {
      failing.mode = 500;
      const sent = await call(
        fragile,
        t.token,
        'SendMessage',
        message('doomed', {
          taskPushNotificationConfig: { url: failing.url, id: 'hook' },
        }),
      );
      const taskId = sent.result.task.id as string;
      const dead = await waitFor(async () => {
        const [d] = await deliveries(fragile, t.token, taskId);
        return d?.state === 'dead' ? d : undefined;
      });
      assert.equal(dead.failures, 3);
      assert.equal(dead.last_error, 'HTTP 500');
      assert.equal(dead.delivered_seq, 0);
      assert.equal(dead.next_attempt_at, null);
      const tries = failing.deliveries.length;
      assert.equal(tries, 3);
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(failing.deliveries.length, tries, 'a dead config is not tried again');
      // Redirects are failures too, never followed.
      failing.mode = 'redirect';
      await call(fragile, t.token, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url: failing.url });
      const redirected = await waitFor(async () => {
        const [d] = await deliveries(fragile, t.token, taskId);
        return d?.state === 'dead' ? d : undefined;
      });
      assert.match(redirected.last_error, /redirect/);
      // Re-setting the config revives it: everything from the cursor on arrives.
      failing.mode = 'ok';
      await call(fragile, t.token, 'CreateTaskPushNotificationConfig', { taskId, id: 'hook', url: failing.url });
      const { expected, got } = await receivedAll(fragile, t.token, taskId, failing);
      assert.deepEqual(got, expected);
      const [alive] = await deliveries(fragile, t.token, taskId);
      assert.equal(alive.state, 'active');
    });
  });
});
