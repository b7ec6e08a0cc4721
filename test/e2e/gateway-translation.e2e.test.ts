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
import {
  a2a,
  authFetch,
  grpcClient,
  readSse,
  restClient,
  sendParams,
  textMessage,
  v1Client,
  V03,
  V1,
  waitFor,
} from '../helpers/a2a.js';
import { acceptedInOrder, WebhookReceiver } from '../helpers/webhook-receiver.js';
import { JsonRpcTransport as V03JsonRpcTransport } from '@a2a-js/sdk-v03/client';
import {
  startGrpcUpstream,
  startRefusingUpstream,
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
  let grpcElsewhere: TranslationUpstream;
  let refusing: Awaited<ReturnType<typeof startRefusingUpstream>>;
  let t: TestTenant;
  const receiver = new WebhookReceiver();

  before(async () => {
    legacy = await startV03Upstream();
    grpcOnly = await startGrpcUpstream();
    // Its card on 127.0.0.1, its gRPC service on another host (another loopback address).
    grpcElsewhere = await startGrpcUpstream('127.0.0.2');
    refusing = await startRefusingUpstream();
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
      ['grpc-elsewhere', grpcElsewhere.url],
      ['refusing', refusing.url],
      ['refusing-rest', refusing.rest],
    ]) {
      const res = await t.client.post('/v1/remote-agents', { name, url, auth: { type: 'bearer', token: TOKEN } });
      assert.equal(res.status, 201, res.text);
    }
    await newAgent(t, { id: 'legacy', backend: { remote: 'legacy' } });
    await newAgent(t, { id: 'grpc-only', backend: { remote: 'grpc-only' } });
    await newAgent(t, { id: 'grpc-elsewhere', backend: { remote: 'grpc-elsewhere' } });
    await newAgent(t, { id: 'refusing', backend: { remote: 'refusing' } });
    await newAgent(t, { id: 'refusing-rest', backend: { remote: 'refusing-rest' } });
  });
  after(async () => {
    await server?.close();
    await legacy?.close();
    await grpcOnly?.close();
    await grpcElsewhere?.close();
    await refusing?.close();
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

  it("a card's gRPC interface on another host than the entry's url is reached without the entry's credential", async () => {
    const reply = await a2a(server.url, t.token, 'grpc-elsewhere', V1).send('hello elsewhere');
    assert.equal(reply.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(reply));
    assert.equal(grpcElsewhere.received.length, 1);
    assert.deepEqual(grpcElsewhere.authorizations, [''], 'the token went to no other host');
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

  /** A rejected call's error; fails when the call succeeds. */
  const refusal = async (call: Promise<unknown>): Promise<Json> => {
    try {
      await call;
    } catch (err) {
      return err as Json;
    }
    return assert.fail('the call succeeded');
  };
  /** The upstream's message as the caller must read it: prefixed, the credential stripped (raw and as a bearer). */
  const REFUSED_RPC = 'upstream: message.parts: the key [redacted] (sent as "Bearer [redacted]") may not send this';
  const REFUSED_REST =
    'upstream: text/plain is not accepted: the key [redacted] (sent as "Bearer [redacted]") may not send it';

  it("answers an upstream's refusal of a send as an error of the caller's binding and dialect, secrets stripped", async () => {
    // v1.0 JSON-RPC, the official client: the upstream's InvalidParams.
    const v1 = await refusal((await v1Client(server.url, t.token, 'refusing')).sendMessage(textMessage('hi')));
    assert.equal(v1.reason, 'INVALID_PARAMS');
    assert.equal(v1.envelopeCode, -32602);
    assert.equal(v1.message, REFUSED_RPC);
    // v0.3 JSON-RPC, the official 0.3 client.
    const legacyClient = new V03JsonRpcTransport({
      endpoint: `${server.url}/v1/a2a/agents/refusing`,
      fetchImpl: authFetch(t.token),
    });
    const v03 = await refusal(
      legacyClient.sendMessage({
        message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
      }),
    );
    assert.equal(v03.errorResponse?.error.code, -32602);
    assert.equal(v03.errorResponse?.error.message, REFUSED_RPC);
    // gRPC: INVALID_ARGUMENT with the same ErrorInfo.
    const overGrpc = await refusal((await grpcClient(server.url, t.token, 'refusing')).sendMessage(textMessage('hi')));
    assert.equal(overGrpc.reason, 'INVALID_PARAMS');
    assert.equal(overGrpc.status, 3);
    assert.equal(overGrpc.message, REFUSED_RPC);
    // HTTP+JSON, from an HTTP+JSON upstream's ContentTypeNotSupported (its google.rpc.Status read as such).
    const rest = await refusal((await restClient(server.url, t.token, 'refusing-rest')).sendMessage(textMessage('hi')));
    assert.equal(rest.reason, 'CONTENT_TYPE_NOT_SUPPORTED');
    assert.equal(rest.statusCode, 400);
    assert.equal(rest.message, REFUSED_REST);
    for (const err of [v1, v03, overGrpc, rest]) assert.ok(!JSON.stringify(err).includes(TOKEN));
    assert.ok(
      refusing.authorizations.every((a) => a === `Bearer ${TOKEN}`),
      'the upstream did get the token',
    );
  });

  it('keeps the refused task failed, names it in the error, and answers a stream that has sent nothing the same way', async () => {
    const rpc = a2a(server.url, t.token, 'refusing-rest', V1);
    const sent = await rpc.send('hi');
    assert.equal(sent.error?.code, -32005, JSON.stringify(sent));
    const info = (sent.error?.data as Json[]).find((d) => d.reason === 'CONTENT_TYPE_NOT_SUPPORTED');
    const taskId = info?.metadata?.task_id as string;
    assert.ok(taskId, JSON.stringify(sent));
    // The task is there for GetTask, ListTasks and the audit trail of what happened: failed, with the reason.
    const task = (await rpc.get(taskId)).result as Json;
    assert.equal(task.status.state, 'TASK_STATE_FAILED');
    assert.match(task.status.message.parts[0].text, /^upstream_error: .*is not accepted/);
    assert.equal(task.metadata['x-arbiter.upstream_error'].type, 'content_type_not_supported');
    assert.ok(!JSON.stringify(task).includes(TOKEN));
    const listed = ((await rpc.list({ status: 'TASK_STATE_FAILED' })).result as Json).tasks as Json[];
    assert.ok(listed.some((x) => x.id === taskId));

    // A stream: the error is its answer (no SSE), as the upstream's own stream would answer.
    const res = await a2a(server.url, t.token, 'refusing', V1).post('SendStreamingMessage', sendParams('hi'));
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const streamed = (await res.json()) as Json;
    assert.equal(streamed.error?.code, -32602);
    assert.equal(streamed.error?.message, REFUSED_RPC);

    // Returning at once: the task, which then fails with the reason (nothing is waiting for an error).
    const early = await rpc.send('hi', { returnImmediately: true });
    const id = (early.result as Json).task.id as string;
    const failed = await waitFor(async () => {
      const got = (await rpc.get(id)).result as Json;
      return got.status.state === 'TASK_STATE_FAILED' ? got : undefined;
    });
    assert.match(failed.status.message.parts[0].text, /^upstream_error: /);
  });

  it("maps an upstream error that has no counterpart to an internal error with the upstream's message", async () => {
    const grpc = await grpcClient(server.url, t.token, 'legacy');
    const err = await refusal(grpc.sendMessage(textMessage('leak')));
    assert.equal(err.status, 13, JSON.stringify(err)); // INTERNAL
    // (The SDK's gRPC client prefixes a status that has no A2A type: "gRPC error for sendMessage: 13 …".)
    assert.match(String(err.message), /upstream: internal error: the key "Bearer \[redacted\]" is not allowed$/);
    assert.ok(!JSON.stringify(err).includes(TOKEN), String(err.message));
    assert.equal(legacy.authorizations.at(-1), `Bearer ${TOKEN}`, 'the upstream did get the token');

    const v03 = await a2a(server.url, t.token, 'legacy', V03).call('message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'leak' }] },
    });
    assert.equal(v03.error?.code, -32603, JSON.stringify(v03));
    assert.match(String(v03.error?.message), /^upstream: .*is not allowed/);
    assert.ok(!JSON.stringify(v03).includes(TOKEN));
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
