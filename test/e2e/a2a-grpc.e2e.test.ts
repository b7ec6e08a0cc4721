import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Role,
  ListTasksRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { A2A_PROTO } from '../../src/a2a-wire/a2a-proto.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import { authFetch, cardUrl, grpcClient, textMessage, waitFor } from '../helpers/a2a.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

type Obj = Record<string, any>;

/** A plain @grpc/grpc-js client of `lf.a2a.v1.A2AService`, loaded from the proto with proto-loader. */
function rawClient(address: string): Obj {
  const root = new protobuf.Root();
  for (const wkt of ['empty', 'struct', 'timestamp'])
    root.addJSON(protobuf.common.get(`google/protobuf/${wkt}.proto`)!.nested!);
  protobuf.parse(A2A_PROTO, root, { keepCase: false });
  const definition = protoLoader.fromJSON(root.toJSON(), {
    keepCase: false,
    enums: String,
    longs: String,
    defaults: false,
  });
  const pkg: Obj = grpc.loadPackageDefinition(definition);
  return new pkg.lf.a2a.v1.A2AService(address, grpc.credentials.createInsecure());
}

/** googleapis' google.rpc.Status and the detail messages A2A uses (spec §10.6), to read the trailer. */
const RPC = protobuf.parse(`
syntax = "proto3";
package google.rpc;
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
message BadRequest { message FieldViolation { string field = 1; string description = 2; } repeated FieldViolation field_violations = 1; }
`).root;

interface GrpcFailure {
  code: number;
  message: string;
  /** `google.rpc.ErrorInfo`, from the `grpc-status-details-bin` trailer. */
  info?: { reason: string; domain: string; metadata?: Record<string, string> };
  /** `google.rpc.BadRequest`'s field violations. */
  fields?: string[];
  statusCode?: number;
}

function failure(err: grpc.ServiceError): GrpcFailure {
  const out: GrpcFailure = { code: err.code, message: err.details };
  const bin = err.metadata?.get('grpc-status-details-bin')[0];
  if (!Buffer.isBuffer(bin)) return out;
  const status = RPC.lookupType('google.rpc.Status').toObject(RPC.lookupType('google.rpc.Status').decode(bin));
  out.statusCode = status.code;
  for (const d of status.details ?? []) {
    if (d.typeUrl === 'type.googleapis.com/google.rpc.ErrorInfo') {
      out.info = RPC.lookupType('google.rpc.ErrorInfo').toObject(
        RPC.lookupType('google.rpc.ErrorInfo').decode(d.value),
      ) as GrpcFailure['info'];
    } else if (d.typeUrl === 'type.googleapis.com/google.rpc.BadRequest') {
      const br = RPC.lookupType('google.rpc.BadRequest').toObject(
        RPC.lookupType('google.rpc.BadRequest').decode(d.value),
      );
      out.fields = (br.fieldViolations ?? []).map((v: Obj) => v.field);
    }
  }
  return out;
}

function metadata(token?: string, version: string | null = '1.0'): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  if (version !== null) md.set('a2a-version', version);
  return md;
}

/** One unary call with the raw client: the reply, or the failure. */
function unary(
  client: Obj,
  method: string,
  request: Obj,
  md: grpc.Metadata,
): Promise<{ ok: Obj } | { err: GrpcFailure }> {
  return new Promise((resolve) => {
    client[method](request, md, (err: grpc.ServiceError | null, reply: Obj) =>
      resolve(err ? { err: failure(err) } : { ok: reply }),
    );
  });
}

const state = (t: Task): string => TaskState[t.status?.state ?? 0];
const asTask = (r: unknown): Task => {
  assert.ok(r && typeof r === 'object' && 'status' in r, `a Task, got ${JSON.stringify(r)}`);
  return r as Task;
};

describe('§10 gRPC binding', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let client: Client;
  let raw: Obj;
  const receiver = new WebhookReceiver();
  before(async () => {
    await receiver.start();
    server = await startTestServer({
      env: { ...GRPC_ON, ARBITER_ECHO_DELAY_MS: '5', ARBITER_PUSH_ALLOWLIST: `127.0.0.1:${receiver.port}` },
    });
    [a, b] = [await newTenant(server, 'grpc-a'), await newTenant(server, 'grpc-b')];
    await newAgent(a, { id: 'twin', role: 'twin', capabilities: ['/mem'] });
    await newAgent(a, { id: 'mine-only', role: 'private' });
    await newAgent(b, { id: 'twin', role: 'twin' });
    client = await grpcClient(server.url, a.token, 'twin');
    raw = rawClient(server.grpcAddress!);
  });
  after(async () => {
    raw?.close();
    await server?.close();
    await receiver.stop();
  });

  describe('§5.2 the card lists the GRPC interface, the agent id as its tenant', () => {
    it('host:port of the gRPC server, tenant = agent id, version 1.0', async () => {
      const res = await authFetch(a.token)(cardUrl(server.url, 'twin'), { headers: { 'A2A-Version': '1.0' } });
      const card = AgentCard.fromJSON(await res.json());
      const g = card.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
      assert.deepEqual(
        g.map((i) => [i.url, i.tenant, i.protocolVersion]),
        [[server.grpcAddress, 'twin', '1.0']],
      );
      // Every 1.0 interface names the agent the same way; 0.3 has no tenant.
      assert.deepEqual(
        card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion, i.tenant]),
        [
          ['JSONRPC', '1.0', 'twin'],
          ['JSONRPC', '0.3', ''],
          ['HTTP+JSON', '1.0', 'twin'],
          ['GRPC', '1.0', 'twin'],
        ],
      );
      assert.equal(client.transport.protocolName, 'GRPC');
    });
  });

  describe('the official SDK client over gRPC', () => {
    it('send, get, list, cancel: the agent of the tenant field', async () => {
      const t = asTask(await client.sendMessage(textMessage('hello over grpc')));
      assert.equal(state(t), 'TASK_STATE_COMPLETED');
      const got = await client.getTask(GetTaskRequest.fromJSON({ id: t.id }));
      assert.equal(got.id, t.id);
      assert.equal(got.metadata?.['x-arbiter.agent_id'], 'twin');
      const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: t.contextId }));
      assert.deepEqual(
        listed.tasks.map((x) => x.id),
        [t.id],
      );
      const heldTask = asTask(await client.sendMessage(textMessage('hold', { returnImmediately: true })));
      const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: heldTask.id }));
      assert.equal(state(canceled), 'TASK_STATE_CANCELED');
    });

    it('Struct and Timestamp fields cross the binding as JSON (message metadata, data parts, statusTimestampAfter)', async () => {
      const contextId = randomUUID();
      const send = textMessage('with data', { contextId });
      send.message!.metadata = { trace: { id: 'x-1', hops: [1, 2.5, true, null] } };
      send.message!.parts.push({
        content: { $case: 'data', value: { rows: [{ a: 1 }, { b: 'two' }] } },
        metadata: undefined,
        filename: '',
        mediaType: 'application/json',
      });
      const t = asTask(await client.sendMessage(send));
      const got = await client.getTask(GetTaskRequest.fromJSON({ id: t.id }));
      const user = got.history.find((m) => m.role === Role.ROLE_USER)!;
      assert.deepEqual(user.metadata, { trace: { id: 'x-1', hops: [1, 2.5, true, null] } });
      const data = user.parts.find((p) => p.content?.$case === 'data');
      assert.deepEqual(data?.content?.value, { rows: [{ a: 1 }, { b: 'two' }] });
      assert.ok(got.status?.timestamp, 'a status timestamp');
      const past = await client.listTasks(
        ListTasksRequest.fromJSON({ contextId, statusTimestampAfter: '2000-01-01T00:00:00Z' }),
      );
      const future = await client.listTasks(
        ListTasksRequest.fromJSON({ contextId, statusTimestampAfter: '2999-01-01T00:00:00Z' }),
      );
      assert.deepEqual([past.tasks.length, future.tasks.length], [1, 0]);
    });

    it('push config CRUD, and the webhook gets the task updates; credentials never come back', async () => {
      const t = asTask(await client.sendMessage(textMessage('hold', { returnImmediately: true })));
      const created = await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({
          taskId: t.id,
          id: 'hook-1',
          url: receiver.url,
          token: 'tok-1',
          authentication: { scheme: 'Bearer', credentials: 'secret-cred' },
        }),
      );
      assert.deepEqual([created.id, created.taskId, created.url], ['hook-1', t.id, receiver.url]);
      assert.equal(created.authentication?.scheme, 'Bearer');
      assert.equal(created.authentication?.credentials, '');
      const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
      assert.equal(got.url, receiver.url);
      const list = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: t.id,
        pageSize: 0,
        pageToken: '',
      });
      assert.deepEqual(
        list.configs.map((c) => c.id),
        ['hook-1'],
      );
      assert.ok(!JSON.stringify(list).includes('secret-cred'));
      await client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
      const canceled = await waitFor(async () =>
        receiver.accepted.find((d) => JSON.stringify(d.body).includes('TASK_STATE_CANCELED')),
      );
      assert.equal(canceled.headers.authorization, 'Bearer secret-cred');
      await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
      const after = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: t.id,
        pageSize: 0,
        pageToken: '',
      });
      assert.deepEqual(after.configs, []);
    });

    it('GetExtendedAgentCard through client.getAgentCard(): the extended card, with the GRPC interface', async () => {
      const c = await grpcClient(server.url, a.token, 'twin');
      const card = await c.getAgentCard();
      assert.deepEqual(
        card.capabilities?.extensions.map((x) => x.uri),
        ['urn:arbiter:agent-profile:v1'],
      );
      assert.ok(card.skills.some((s) => s.id === 'memory'));
      assert.ok(card.supportedInterfaces.some((i) => i.protocolBinding === 'GRPC' && i.tenant === 'twin'));
    });

    it('a stream ends when its task ends; the terminal status is its last message', async () => {
      const seen: string[] = [];
      for await (const e of client.sendMessageStream(textMessage('a few streamed words'))) {
        seen.push(e.payload?.$case ?? 'none');
      }
      assert.equal(seen[0], 'task');
      assert.equal(seen[seen.length - 1], 'statusUpdate');
    });
  });

  describe('§10.6 errors: gRPC status plus google.rpc.ErrorInfo (raw @grpc/grpc-js)', () => {
    it('no bearer, a bad one, the admin token → UNAUTHENTICATED / PERMISSION_DENIED', async () => {
      const req = { tenant: 'twin', id: randomUUID() };
      const none = await unary(raw, 'GetTask', req, metadata(undefined));
      assert.ok('err' in none);
      assert.equal(none.err.code, grpc.status.UNAUTHENTICATED);
      assert.equal(none.err.info?.reason, 'UNAUTHENTICATED');
      assert.equal(none.err.info?.domain, 'a2a-protocol.org');
      const bad = await unary(raw, 'GetTask', req, metadata('atr_notavalidtoken'));
      assert.ok('err' in bad);
      assert.equal(bad.err.code, grpc.status.UNAUTHENTICATED);
      const admin = await unary(raw, 'GetTask', req, metadata(server.adminToken));
      assert.ok('err' in admin);
      assert.equal(admin.err.code, grpc.status.PERMISSION_DENIED);
      // The same refusal on a streaming method, before any message.
      const stream = raw.SubscribeToTask(req, metadata(undefined));
      const err = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
      assert.equal(err.code, grpc.status.UNAUTHENTICATED);
    });

    it("another tenant's task (and agent) → NOT_FOUND / TASK_NOT_FOUND, exactly like a missing one", async () => {
      const mine = asTask(await client.sendMessage(textMessage('private')));
      const missing = randomUUID();
      const theirs = await unary(raw, 'GetTask', { tenant: 'twin', id: mine.id }, metadata(b.token));
      const none = await unary(raw, 'GetTask', { tenant: 'twin', id: missing }, metadata(b.token));
      assert.ok('err' in theirs && 'err' in none);
      assert.equal(theirs.err.code, grpc.status.NOT_FOUND);
      assert.equal(theirs.err.info?.reason, 'TASK_NOT_FOUND');
      assert.equal(theirs.err.message.replace(mine.id, 'ID'), none.err.message.replace(missing, 'ID'));
      assert.equal(theirs.err.statusCode, grpc.status.NOT_FOUND);
      // An agent only tenant A has, asked for by tenant B, is a missing agent; so is an id that cannot be one.
      const agent = await unary(raw, 'GetTask', { tenant: 'mine-only', id: missing }, metadata(b.token));
      const nobody = await unary(raw, 'GetTask', { tenant: 'nobody', id: missing }, metadata(b.token));
      const odd = await unary(raw, 'GetTask', { tenant: 'agents/../x', id: missing }, metadata(b.token));
      for (const r of [agent, nobody, odd]) {
        assert.ok('err' in r);
        assert.equal(r.err.code, grpc.status.NOT_FOUND);
        assert.equal(r.err.info?.reason, 'TASK_NOT_FOUND');
      }
      assert.equal(
        (agent as { err: GrpcFailure }).err.message.replace('mine-only', 'A'),
        (nobody as { err: GrpcFailure }).err.message.replace('nobody', 'A'),
      );
    });

    it('a2a-version: absent (0.3) or unknown → FAILED_PRECONDITION / VERSION_NOT_SUPPORTED', async () => {
      for (const version of [null, '0.3', '9.9']) {
        const r = await unary(raw, 'GetTask', { tenant: 'twin', id: randomUUID() }, metadata(a.token, version));
        assert.ok('err' in r, String(version));
        assert.equal(r.err.code, grpc.status.FAILED_PRECONDITION);
        assert.equal(r.err.info?.reason, 'VERSION_NOT_SUPPORTED');
        assert.equal(r.err.info?.metadata?.supportedVersions, '1.0');
      }
    });

    it('invalid params → INVALID_ARGUMENT / INVALID_PARAMS with a BadRequest naming the field', async () => {
      const md = metadata(a.token);
      const noMessage = await unary(raw, 'SendMessage', { tenant: 'twin' }, md);
      assert.ok('err' in noMessage);
      assert.equal(noMessage.err.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(noMessage.err.info?.reason, 'INVALID_PARAMS');
      assert.deepEqual(noMessage.err.fields, ['message']);
      const noParts = await unary(
        raw,
        'SendMessage',
        { tenant: 'twin', message: { messageId: 'm1', role: 'ROLE_USER' } },
        md,
      );
      assert.ok('err' in noParts);
      assert.equal(noParts.err.code, grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(noParts.err.fields, ['message.parts']);
      // Too many parts: refused while the bytes are checked, before a part is decoded, as JSON-RPC refuses them.
      const parts = Array.from({ length: 65 }, () => ({ text: 'x' }));
      const tooMany = await unary(
        raw,
        'SendMessage',
        { tenant: 'twin', message: { messageId: 'm1', role: 'ROLE_USER', parts } },
        md,
      );
      assert.ok('err' in tooMany);
      assert.deepEqual([tooMany.err.code, tooMany.err.info?.reason], [grpc.status.INVALID_ARGUMENT, 'INVALID_PARAMS']);
      assert.deepEqual(tooMany.err.fields, ['message.parts']);
      assert.match(tooMany.err.message, /at most 64 parts/);
      const page = await unary(raw, 'ListTasks', { tenant: 'twin', pageSize: 1000 }, md);
      assert.ok('err' in page);
      assert.deepEqual([page.err.code, page.err.fields], [grpc.status.INVALID_ARGUMENT, ['pageSize']]);
      const noTenant = await unary(raw, 'GetTask', { id: randomUUID() }, md);
      assert.ok('err' in noTenant);
      assert.equal(noTenant.err.code, grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(noTenant.err.fields, ['tenant']);
      const noId = await unary(raw, 'CancelTask', { tenant: 'twin' }, md);
      assert.ok('err' in noId);
      assert.deepEqual([noId.err.code, noId.err.fields], [grpc.status.INVALID_ARGUMENT, ['id']]);
    });

    it('a refused role or part says what came: the enum name, or the part’s field names, never their values', async () => {
      const md = metadata(a.token);
      const send = (message: Obj) =>
        unary(raw, 'SendMessage', { tenant: 'twin', message: { messageId: randomUUID(), ...message } }, md);
      const agent = await send({ role: 'ROLE_AGENT', parts: [{ text: 'x' }] });
      assert.ok('err' in agent);
      assert.deepEqual([agent.err.code, agent.err.fields], [grpc.status.INVALID_ARGUMENT, ['message.role']]);
      assert.equal(agent.err.message, 'invalid params: message.role must be ROLE_USER (got "ROLE_AGENT")');
      const unspecified = await send({ role: 'ROLE_UNSPECIFIED', parts: [{ text: 'x' }] });
      assert.ok('err' in unspecified);
      assert.match(unspecified.err.message, /message\.role must be ROLE_USER \(got "ROLE_UNSPECIFIED"\)$/);
      const unset = await send({ parts: [{ text: 'x' }] });
      assert.ok('err' in unset);
      assert.match(unset.err.message, /message\.role must be ROLE_USER \(got nothing\)$/);
      const empty = await send({
        role: 'ROLE_USER',
        parts: [{ text: 'ok' }, { filename: 'secret-plan.txt', mediaType: 'text/plain' }],
      });
      assert.ok('err' in empty);
      assert.deepEqual(empty.err.fields, ['message.parts[1]']);
      assert.match(
        empty.err.message,
        /must have one of text, raw, url, data \(got keys: (filename, mediaType|mediaType, filename)\)$/,
      );
      assert.ok(!empty.err.message.includes('secret-plan'));
    });

    it('bytes that are not the message → INVALID_ARGUMENT / INVALID_REQUEST; the server carries on', async () => {
      const r = await new Promise<GrpcFailure>((resolve, reject) => {
        (raw as grpc.Client).makeUnaryRequest(
          '/lf.a2a.v1.A2AService/SendMessage',
          (x: Buffer) => x,
          (x: Buffer) => x,
          // `message` (field 2) of 3 bytes, holding `parts` (field 4) of 5 bytes: cut short.
          Buffer.from([0x12, 0x03, 0x22, 0x05, 0x01]),
          metadata(a.token),
          (err) => (err ? resolve(failure(err)) : reject(new Error('accepted garbage'))),
        );
      });
      assert.equal(r.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(r.info?.reason, 'INVALID_REQUEST');
      const ok = await unary(raw, 'ListTasks', { tenant: 'twin', pageSize: 1 }, metadata(a.token));
      assert.ok('ok' in ok);
    });

    it('a field with the wrong wire type → INVALID_ARGUMENT naming the field, not a request for some other agent', async () => {
      const send = (method: string, bytes: number[]) =>
        new Promise<GrpcFailure>((resolve, reject) => {
          (raw as grpc.Client).makeUnaryRequest(
            `/lf.a2a.v1.A2AService/${method}`,
            (x: Buffer) => x,
            (x: Buffer) => x,
            Buffer.from(bytes),
            metadata(a.token),
            (err) => (err ? resolve(failure(err)) : reject(new Error('accepted an ill-typed message'))),
          );
        });
      // tenant (field 1, a string) sent as a 32-bit value, a varint, and as a string cut short; then id as a varint.
      for (const [method, bytes, field, sent] of [
        ['GetTask', [0x0d, 0x01, 0x02, 0x03, 0x04], 'tenant', /is sent 32-bit \(wire type 5\)/],
        ['ListTasks', [0x08, 0x05], 'tenant', /is sent varint \(wire type 0\)/],
        ['CancelTask', [0x0a, 0x09, 0x74, 0x77], 'tenant', /claims 9 bytes, but only 2 remain/],
        ['GetTask', [0x0a, 0x04, 0x74, 0x77, 0x69, 0x6e, 0x10, 0x01], 'id', /is sent varint \(wire type 0\)/],
      ] as const) {
        const r = await send(method, [...bytes]);
        assert.equal(r.code, grpc.status.INVALID_ARGUMENT, `${method} ${bytes.join(',')}: ${r.message}`);
        assert.equal(r.info?.reason, 'INVALID_REQUEST');
        assert.match(r.message, new RegExp(`^the request is not a valid ${method} message: ${field} `));
        assert.match(r.message, sent);
      }
    });

    it('a message over the A2A body limit → RESOURCE_EXHAUSTED, before the handler', async () => {
      const huge = 'x'.repeat(server.config.a2aBodyBytes + 1024);
      const r = await unary(
        raw,
        'SendMessage',
        { tenant: 'twin', message: { messageId: 'big', role: 'ROLE_USER', parts: [{ text: huge }] } },
        metadata(a.token),
      );
      assert.ok('err' in r);
      assert.equal(r.err.code, grpc.status.RESOURCE_EXHAUSTED);
    });

    it('a request of any method but SendMessage / SendStreamingMessage over ARBITER_MAX_BODY_BYTES → RESOURCE_EXHAUSTED', async () => {
      const big = 'x'.repeat(server.config.maxBodyBytes + 1);
      const md = () => metadata(a.token);
      for (const [method, request] of [
        ['GetTask', { tenant: 'twin', id: big }],
        ['ListTasks', { tenant: 'twin', contextId: big }],
        ['CancelTask', { tenant: 'twin', id: big }],
        ['CreateTaskPushNotificationConfig', { tenant: 'twin', taskId: 't', url: 'http://127.0.0.1/', token: big }],
        ['GetTaskPushNotificationConfig', { tenant: 'twin', taskId: 't', id: big }],
        ['ListTaskPushNotificationConfigs', { tenant: 'twin', taskId: big }],
        ['DeleteTaskPushNotificationConfig', { tenant: 'twin', taskId: 't', id: big }],
        ['GetExtendedAgentCard', { tenant: big }],
      ] as const) {
        const r = await unary(raw, method, request, md());
        assert.ok('err' in r, `${method} accepted`);
        assert.equal(r.err.code, grpc.status.RESOURCE_EXHAUSTED, `${method}: ${r.err.message}`);
        assert.match(
          r.err.message,
          new RegExp(`^a ${method} request may be at most ${server.config.maxBodyBytes} bytes`),
        );
      }
      // A stream's request too: the call ends with the status.
      const sub = raw.SubscribeToTask({ tenant: 'twin', id: big }, md());
      const ended = await new Promise<GrpcFailure>((resolve) => {
        sub.on('data', () => undefined);
        sub.on('error', (err: grpc.ServiceError) => resolve(failure(err)));
      });
      assert.equal(ended.code, grpc.status.RESOURCE_EXHAUSTED);
      // Authentication still comes first: without a bearer the size is not looked at.
      const anonymous = await unary(raw, 'GetTask', { tenant: 'twin', id: big }, metadata(undefined));
      assert.ok('err' in anonymous);
      assert.equal(anonymous.err.code, grpc.status.UNAUTHENTICATED);
    });

    it('besides its file bytes a message stays within ARBITER_MAX_BODY_BYTES; file bytes count as the bytes they are', async () => {
      const plain = server.config.maxBodyBytes;
      const send = (parts: Obj[], meta?: Obj) =>
        unary(
          raw,
          'SendMessage',
          { tenant: 'twin', message: { messageId: randomUUID(), role: 'ROLE_USER', parts, metadata: meta } },
          metadata(a.token),
        );
      // Text over the plain limit (the message is far under the gRPC limit, which makes room for files).
      const text = await send([{ text: 'x'.repeat(plain + 10) }]);
      assert.ok('err' in text, 'refused');
      assert.equal(text.err.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(text.err.message, /besides its file bytes/);
      // Metadata whose keys look like file bytes are not file bytes.
      const disguised = await send([{ text: 'hi' }], {
        fields: { raw: { stringValue: 'A'.repeat(plain) }, bytes: { stringValue: 'A'.repeat(plain) } },
      });
      assert.ok('err' in disguised, 'refused');
      assert.equal(disguised.err.code, grpc.status.RESOURCE_EXHAUSTED);
      // A file larger than the plain limit (within ARBITER_MAX_FILE_BYTES), sent as raw bytes, goes through.
      const bytes = randomBytes(plain + 4096);
      const file = await send([{ text: 'keep this' }, { raw: bytes, mediaType: 'application/octet-stream' }]);
      assert.ok('ok' in file, JSON.stringify('err' in file ? file.err : {}));
      const task = file.ok.task as Obj;
      const stored = await unary(raw, 'GetTask', { tenant: 'twin', id: task.id }, metadata(a.token));
      assert.ok('ok' in stored);
      const part = (stored.ok.history as Obj[])[0]?.parts[1];
      assert.ok(Buffer.from(part.raw).equals(bytes), 'the same bytes back');
    });

    it('an unknown method → UNIMPLEMENTED', async () => {
      const r = await new Promise<grpc.ServiceError>((resolve, reject) => {
        (raw as grpc.Client).makeUnaryRequest(
          '/lf.a2a.v1.A2AService/NoSuchMethod',
          (x: Buffer) => x,
          (x: Buffer) => x,
          Buffer.alloc(0),
          metadata(a.token),
          (err) => (err ? resolve(err) : reject(new Error('answered'))),
        );
      });
      assert.equal(r.code, grpc.status.UNIMPLEMENTED);
    });
  });

  describe('§10.7 streams: a cancelled call releases its subscription', () => {
    it('with one stream allowed, a second subscription succeeds once the first call is cancelled', async () => {
      const u = await newTenant(server, 'grpc-streams');
      await newAgent(u, { id: 'twin', role: 'twin' });
      const patched = await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { max_open_streams: 1 });
      assert.equal(patched.status, 200, patched.text);
      const c = await grpcClient(server.url, u.token, 'twin');
      const t = asTask(await c.sendMessage(textMessage('hold', { returnImmediately: true })));
      const md = metadata(u.token);
      const first = raw.SubscribeToTask({ tenant: 'twin', id: t.id }, md);
      const firstFrame = await new Promise<Obj>((resolve, reject) => {
        first.once('data', resolve);
        first.once('error', reject);
      });
      assert.ok(firstFrame.task, 'the current task first');
      // The slot is taken: a second stream is refused while the first is open.
      const refused = raw.SubscribeToTask({ tenant: 'twin', id: t.id }, md);
      const refusal = await new Promise<grpc.ServiceError>((resolve) => refused.on('error', resolve));
      assert.equal(refusal.code, grpc.status.RESOURCE_EXHAUSTED);
      first.on('error', () => undefined); // CANCELLED, as asked
      first.cancel();
      const second = await waitFor(async () => {
        const s = raw.SubscribeToTask({ tenant: 'twin', id: t.id }, md);
        const got = await new Promise<Obj | undefined>((resolve) => {
          s.once('data', resolve);
          s.once('error', () => resolve(undefined));
        });
        if (!got) return undefined;
        return s as grpc.ClientReadableStream<Obj>;
      });
      // Canceling the task ends the open stream with its terminal status.
      const rest: Obj[] = [];
      second.on('data', (m: Obj) => rest.push(m));
      const ended = new Promise<void>((resolve, reject) => {
        second.on('end', resolve);
        second.on('error', reject);
      });
      await c.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
      await ended;
      assert.equal(rest[rest.length - 1]?.statusUpdate?.status?.state, 'TASK_STATE_CANCELED');
    });

    it('revoking the token an open stream was opened with ends it (UNAUTHENTICATED, saying why); the task runs on', async () => {
      const u = await newTenant(server, 'grpc-revoke');
      await newAgent(u, { id: 'twin', role: 'twin' });
      const second = await server.admin.post(`/v1/admin/tenants/${u.id}/tokens`);
      assert.equal(second.status, 201, second.text);
      const c = await grpcClient(server.url, u.token, 'twin');
      const t = asTask(await c.sendMessage(textMessage('hold', { returnImmediately: true })));
      const stream = raw.SubscribeToTask({ tenant: 'twin', id: t.id }, metadata(second.body.token as string));
      await new Promise<Obj>((resolve, reject) => {
        stream.once('data', resolve);
        stream.once('error', reject);
      });
      const ended = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
      stream.on('data', () => undefined);
      const revoked = await server.admin.delete(`/v1/admin/tenants/${u.id}/tokens/${second.body.id as string}`);
      assert.equal(revoked.status, 200, revoked.text);
      const err = await ended;
      assert.equal(err.code, grpc.status.UNAUTHENTICATED);
      assert.match(err.details, /revoked/);
      // The task is the tenant's work: it is still running, and the other token still reaches it.
      const still = asTask(await c.getTask(GetTaskRequest.fromJSON({ id: t.id })));
      assert.equal(state(still), 'TASK_STATE_WORKING');
      await c.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
    });

    it('SubscribeToTask through the SDK, cancelled by the client with an AbortSignal, frees the slot too', async () => {
      const u = await newTenant(server, 'grpc-abort');
      await newAgent(u, { id: 'twin', role: 'twin' });
      await server.admin.patch(`/v1/admin/tenants/${u.id}/limits`, { max_open_streams: 1 });
      const c = await grpcClient(server.url, u.token, 'twin');
      const t = asTask(await c.sendMessage(textMessage('hold', { returnImmediately: true })));
      for (let round = 0; round < 3; round++) {
        const ctl = new AbortController();
        const frames: StreamResponse[] = [];
        await waitFor(async () => {
          try {
            for await (const e of c.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: t.id }), {
              signal: ctl.signal,
            })) {
              frames.push(e);
              ctl.abort();
            }
          } catch {
            // cancelled by us, or refused while the previous slot is being released
          }
          return frames.length > 0 ? true : undefined;
        });
        assert.equal(frames[0].payload?.$case, 'task');
      }
      await c.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
    });
  });
});

describe('§10 gRPC binding: shutdown', () => {
  it('app.close() closes the gRPC server, ending the open streams', async () => {
    // The held run gets no grace to finish: the test is about the gRPC server, not the run.
    const server = await startTestServer({ env: { ...GRPC_ON, ARBITER_SHUTDOWN_GRACE_MS: '0' } });
    const t = await newTenant(server, 'grpc-close');
    const c = await grpcClient(server.url, t.token, 'index');
    const held = asTask(await c.sendMessage(textMessage('hold', { returnImmediately: true })));
    const raw = rawClient(server.grpcAddress!);
    const stream = raw.SubscribeToTask({ tenant: 'index', id: held.id }, metadata(t.token));
    await new Promise((resolve, reject) => {
      stream.once('data', resolve);
      stream.once('error', reject);
    });
    const ended = new Promise<string>((resolve) => {
      stream.on('error', (e: grpc.ServiceError) => resolve(grpc.status[e.code]));
      stream.on('end', () => resolve('end'));
    });
    await server.close();
    assert.ok(['end', 'CANCELLED', 'UNAVAILABLE'].includes(await ended));
    const after = await unary(raw, 'GetTask', { tenant: 'index', id: held.id }, metadata(t.token));
    assert.ok('err' in after);
    assert.equal(after.err.code, grpc.status.UNAVAILABLE);
    raw.close();
  });
});
