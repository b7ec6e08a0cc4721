// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetTaskRequest, SendMessageRequest, Task, TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { TaskFiles } from '../../src/tasks/task-files.service.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import { a2a, grpcClient, readSse, restClient, V03, V1, waitFor } from '../helpers/a2a.js';
import { acceptedInOrder, WebhookReceiver } from '../helpers/webhook-receiver.js';
import {
  startGrpcUpstream,
  startV03Upstream,
  UPSTREAM_FILE,
  UPSTREAM_URL,
  type TranslationUpstream,
} from '../helpers/translation-upstreams.js';

const TOKEN = `upstream-secret-${randomBytes(12).toString('hex')}`;
/** A file the caller sends: binary (stored by Arbiter as a file of the task, not inline). */
const CALLER_FILE = randomBytes(2048);

type Json = Record<string, any>;
const state = (t: Task): string => TaskState[t.status?.state ?? 0];

describe('gateway translation: any binding and dialect in front of any binding and dialect', () => {
  let server: TestServer;
  let legacy: TranslationUpstream;
  let grpcOnly: TranslationUpstream;
  let t: TestTenant;
  const receiver = new WebhookReceiver();

  before(async () => {
    legacy = await startV03Upstream();
    grpcOnly = await startGrpcUpstream();
    server = await startTestServer({
      env: {
        ...GRPC_ON,
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_A2A_CARD_TTL_MS: '0',
        ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
        ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
        ARBITER_PUSH_POLL_MS: '100',
        ARBITER_PUSH_BACKOFF_BASE_MS: '50',
        ARBITER_PUSH_BACKOFF_MAX_MS: '200',
      },
    });
    await receiver.start();
    t = await newTenant(server, 'gw-translate');
    for (const [name, url] of [
      ['legacy', legacy.url],
      ['grpc-only', grpcOnly.url],
    ]) {
      const res = await t.client.post('/v1/remote-agents', { name, url, auth: { type: 'bearer', token: TOKEN } });
      assert.equal(res.status, 201, res.text);
    }
    await newAgent(t, { id: 'legacy', backend: { remote: 'legacy' } });
    await newAgent(t, { id: 'grpc-only', backend: { remote: 'grpc-only' } });
  });
  after(async () => {
    await server?.close();
    await legacy?.close();
    await grpcOnly?.close();
    await receiver.stop();
  });

  const v1Parts = (text: string) => [
    { text },
    { raw: CALLER_FILE.toString('base64'), mediaType: 'application/octet-stream', filename: 'in.bin' },
    { url: 'https://files.example/in.txt', mediaType: 'text/plain', filename: 'in.txt' },
    { data: { ask: 'translate', n: 1 } },
  ];

  const send = async (c: Client, text: string): Promise<Task> => {
    const r = await c.sendMessage(
      SendMessageRequest.fromJSON({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: v1Parts(text) } }),
    );
    assert.ok('status' in r, `a task, got ${JSON.stringify(r)}`);
    return r;
  };

  it('a v1.0 caller on gRPC and on HTTP+JSON reaches the SDK 0.3 upstream: text, file bytes and URL, data both ways', async () => {
    for (const [name, client] of [
      ['grpc', await grpcClient(server.url, t.token, 'legacy')],
      ['rest', await restClient(server.url, t.token, 'legacy')],
    ] as const) {
      const before = legacy.received.length;
      const task = await send(client, `hello ${name}`);
      assert.equal(state(task), 'TASK_STATE_COMPLETED', name);
      // The upstream got the caller's parts in its own dialect, the file as its bytes (not Arbiter's reference).
      const got = legacy.received[before] as Json[];
      assert.deepEqual(
        got.map((p) => p.kind),
        ['text', 'file', 'file', 'data'],
        name,
      );
      assert.equal(got[1]?.file.bytes, CALLER_FILE.toString('base64'), name);
      assert.equal(got[1]?.file.name, 'in.bin');
      assert.equal(got[2]?.file.uri, 'https://files.example/in.txt');
      assert.deepEqual(got[3]?.data, { ask: 'translate', n: 1 });
      assert.equal(legacy.authorizations.at(-1), `Bearer ${TOKEN}`, 'the registry entry’s credential');
      // And the caller gets the upstream's parts in its dialect.
      const full = Task.toJSON(
        await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 10 })),
      ) as Json;
      assert.equal(full.history.at(-1).parts[0].text, `v03 heard: hello ${name}`);
      const echo = full.artifacts.find((a: Json) => a.artifactId === 'echo');
      assert.ok(echo, name);
      const [inFile, inUrl, inData, upFile, upUrl, upData] = echo.parts as Json[];
      assert.equal(inFile?.raw, CALLER_FILE.toString('base64'));
      assert.equal(inUrl?.url, 'https://files.example/in.txt');
      assert.deepEqual(inData?.data, { ask: 'translate', n: 1 });
      assert.equal(upFile?.raw, UPSTREAM_FILE.toString('base64'));
      assert.equal(upFile?.mediaType, 'image/png');
      assert.equal(upFile?.filename, 'up.png');
      assert.equal(upUrl?.url, UPSTREAM_URL);
      assert.deepEqual(upData?.data, { from: 'v03', n: 3 });
      // Files are stored with the task like a hosted agent's (the log holds references): the caller's, and the two
      // the upstream's artifact carries (the caller's echoed, and its own).
      assert.equal(await server.running.app.get(TaskFiles).count(t.id, task.id), 3, name);
    }
  });

  it('a v0.3 JSON-RPC caller reaches a v1.0 upstream that speaks only gRPC', async () => {
    const rpc = a2a(server.url, t.token, 'grpc-only', V03);
    const reply = await rpc.call('message/send', {
      message: {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        parts: [
          { kind: 'text', text: 'hello v03' },
          {
            kind: 'file',
            file: { bytes: CALLER_FILE.toString('base64'), mimeType: 'application/octet-stream', name: 'in.bin' },
          },
          { kind: 'file', file: { uri: 'https://files.example/in.txt', mimeType: 'text/plain', name: 'in.txt' } },
          { kind: 'data', data: { ask: 'translate', n: 1 } },
        ],
      },
    });
    const task = reply.result as Json;
    assert.equal(task?.kind, 'task', JSON.stringify(reply));
    assert.equal(task.status.state, 'completed');
    assert.equal(task.status.message.parts[0].text, 'grpc heard: hello v03');
    // The upstream got v1.0 parts over gRPC, the file as its bytes, with the registry entry's credential.
    const got = grpcOnly.received.at(-1) as Json[];
    assert.equal(got[0]?.text, 'hello v03');
    assert.equal(got[1]?.raw, CALLER_FILE.toString('base64'));
    assert.equal(got[1]?.filename, 'in.bin');
    assert.equal(got[2]?.url, 'https://files.example/in.txt');
    assert.deepEqual(got[3]?.data, { ask: 'translate', n: 1 });
    assert.equal(grpcOnly.authorizations.at(-1), `Bearer ${TOKEN}`);
    // The caller reads the upstream's parts in v0.3 shapes.
    const echo = (task.artifacts as Json[]).find((a) => a.artifactId === 'echo');
    const parts = echo?.parts as Json[];
    assert.deepEqual(
      parts.map((p) => p.kind),
      ['file', 'file', 'data', 'file', 'file', 'data'],
    );
    assert.equal(parts[0]?.file.bytes, CALLER_FILE.toString('base64'));
    assert.equal(parts[3]?.file.bytes, UPSTREAM_FILE.toString('base64'));
    assert.equal(parts[3]?.file.mimeType, 'image/png');
    assert.equal(parts[4]?.file.uri, UPSTREAM_URL);
    assert.deepEqual(parts[5]?.data, { from: 'grpc', n: 3 });
  });

  it("maps an upstream's error to the caller's binding and dialect with its message, the credential stripped", async () => {
    const grpc = await grpcClient(server.url, t.token, 'legacy');
    const failed = await send(grpc, 'leak');
    assert.equal(state(failed), 'TASK_STATE_FAILED');
    const said = (Task.toJSON(failed) as Json).status.message.parts[0].text as string;
    assert.match(said, /upstream_error: .*-32603.*is not allowed/);
    assert.ok(!said.includes(TOKEN), said);
    assert.equal(legacy.authorizations.at(-1), `Bearer ${TOKEN}`, 'the upstream did get the token');

    const v03 = await a2a(server.url, t.token, 'legacy', V03).call('message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'leak' }] },
    });
    const task = v03.result as Json;
    assert.equal(task.status.state, 'failed');
    const text = JSON.stringify(task);
    assert.match(text, /is not allowed/);
    assert.ok(!text.includes(TOKEN), text);
  });

  /** The seqs of a task's stored log events (the native API's `format=log`), after `since` when given. */
  const logSeqs = async (taskId: string, since?: { query?: number; header?: number }): Promise<number[]> => {
    const q = since?.query !== undefined ? `&since_seq=${since.query}` : '';
    const res = await fetch(`${server.url}/v1/requests/${taskId}/events?format=log${q}`, {
      headers: {
        authorization: `Bearer ${t.token}`,
        ...(since?.header !== undefined ? { 'last-event-id': String(since.header) } : {}),
      },
    });
    assert.equal(res.status, 200);
    return (await readSse(res)).events.map((e) => Number(e.id));
  };

  it('pushes every status and artifact update of a task to a webhook, for an upstream that has no push', async () => {
    const card = await fetch(`${legacy.url}/agent-card.json`).then((r) => r.json() as Promise<Json>);
    assert.equal(card.capabilities.pushNotifications, false, 'the upstream has no push');
    const rpc = a2a(server.url, t.token, 'legacy', V1);
    const sent = await rpc.call('SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: v1Parts('push me') },
      configuration: { taskPushNotificationConfig: { url: receiver.url, token: 'hook-token' } },
    });
    const taskId = (sent.result as Json).task.id as string;
    const pushable = async () => {
      const res = await fetch(`${server.url}/v1/requests/${taskId}/events?format=log`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      return (await readSse(res)).events
        .filter((e) => e.event === 'status' || e.event === 'artifact')
        .map((e) => Number(e.id));
    };
    const expected = await pushable();
    const mine = await waitFor(async () => {
      const got = receiver.accepted.filter(
        (d) => (d.body?.statusUpdate?.taskId ?? d.body?.artifactUpdate?.taskId) === taskId,
      );
      return acceptedInOrder(got).seqs.length >= expected.length ? got : undefined;
    });
    assert.deepEqual(acceptedInOrder(mine).seqs, expected, 'every pushable event, in log order');
    assert.ok(mine.every((d) => d.headers['x-a2a-notification-token'] === 'hook-token'));
    const states = mine.filter((d) => d.body.statusUpdate).map((d) => d.body.statusUpdate.status.state);
    assert.equal(states.at(-1), 'TASK_STATE_COMPLETED');
    const echo = mine.find((d) => d.body.artifactUpdate?.artifact.artifactId === 'echo')?.body.artifactUpdate.artifact;
    assert.equal(
      echo?.parts[3]?.raw,
      UPSTREAM_FILE.toString('base64'),
      "the upstream's file reaches the webhook with its bytes",
    );
  });

  it('lists the tasks and replays a task from a given point, for an upstream that has no ListTasks', async () => {
    // The SDK 0.3 server has no tasks/list.
    const res = await fetch(legacy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list', params: {} }),
    });
    assert.equal(((await res.json()) as Json).error?.code, -32601);

    const rpc = a2a(server.url, t.token, 'legacy', V1);
    const first = await rpc.send('list one');
    const contextId = (first.result as Json).task.contextId as string;
    const second = await rpc.send('list two', { contextId });
    const listed = await rpc.list({ contextId, status: 'TASK_STATE_COMPLETED' });
    const ids = ((listed.result as Json).tasks as Json[]).map((x) => x.id);
    assert.deepEqual(ids.sort(), [(first.result as Json).task.id, (second.result as Json).task.id].sort());
    // v0.3 callers list them too (tasks/list with v0.3 state names).
    const legacyList = await a2a(server.url, t.token, 'legacy', V03).call('tasks/list', { contextId });
    assert.equal(((legacyList.result as Json).tasks as Json[]).length, 2);

    // Replay from a given point: the events after seq k, by since_seq or Last-Event-ID, no gap and no repeat.
    const taskId = (second.result as Json).task.id as string;
    const all = await logSeqs(taskId);
    assert.ok(all.length >= 4, JSON.stringify(all));
    const k = all[Math.floor(all.length / 2)];
    const after = all.filter((s) => s > k);
    assert.deepEqual(await logSeqs(taskId, { query: k }), after);
    assert.deepEqual(await logSeqs(taskId, { header: k }), after);
  });
});
