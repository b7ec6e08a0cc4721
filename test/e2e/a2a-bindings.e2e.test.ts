import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  SubscribeToTaskRequest,
  TaskState,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { status as grpc } from '@grpc/grpc-js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import { grpcClient, restClient, textMessage, v1Client, waitFor } from '../helpers/a2a.js';

/** One binding under test: the official SDK client over it, and a second tenant's client on the same agent id. */
interface Binding {
  name: 'JSONRPC' | 'HTTP+JSON' | 'GRPC';
  client: Client;
  stranger: Client;
}

/** What an SDK error says, on any binding: the A2A reason, and the binding's own code (JSON-RPC, HTTP, gRPC status). */
interface ErrorOutcome {
  error: string;
  code: number | undefined;
  message: string;
}

async function outcome<T>(p: Promise<T>): Promise<T | ErrorOutcome> {
  try {
    return await p;
  } catch (err) {
    const e = err as { reason?: string; envelopeCode?: number; statusCode?: number; status?: number; message: string };
    return {
      error: e.reason ?? `not an A2A error: ${String(err)}`,
      code: e.envelopeCode ?? e.statusCode ?? e.status,
      message: e.message,
    };
  }
}

const state = (t: Task): string => TaskState[t.status?.state ?? 0];
const answer = (t: Task): string =>
  t.artifacts
    .filter((a) => a.name === 'response')
    .flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')))
    .join('');

/** A stream as its shape: `task:STATE`, `artifact`, `status:STATE`, in order (consecutive artifacts folded). */
async function shape(
  stream: AsyncIterable<StreamResponse>,
  onFirst?: (e: StreamResponse) => unknown,
): Promise<string[]> {
  const out: string[] = [];
  for await (const e of stream) {
    const p = e.payload;
    const item =
      p?.$case === 'task'
        ? `task:${TaskState[p.value.status?.state ?? 0]}`
        : p?.$case === 'statusUpdate'
          ? `status:${TaskState[p.value.status?.state ?? 0]}`
          : (p?.$case ?? 'none');
    if (out.length === 0) await onFirst?.(e);
    if (item !== 'artifactUpdate' || out[out.length - 1] !== 'artifactUpdate') out.push(item);
  }
  return out;
}

const asTask = (r: unknown): Task => {
  assert.ok(r && typeof r === 'object' && 'status' in r, `a Task, got ${JSON.stringify(r)}`);
  return r as Task;
};

/** A task that stays working until canceled (the echo model's `hold`). */
const held = async (c: Client): Promise<Task> =>
  asTask(await c.sendMessage(textMessage('hold', { returnImmediately: true })));

interface Scenario {
  name: string;
  run(b: Binding): Promise<unknown>;
  /** The outcome, the same on every binding. */
  expect: unknown;
  /** For an error: the JSON-RPC code (§9.5), the HTTP status (§11.6) and the gRPC status (§10.6) of §5.4. */
  codes?: Record<Binding['name'], number>;
}

const V = (version: string) => ({ serviceParameters: { 'A2A-Version': version } });

const SCENARIOS: Scenario[] = [
  {
    name: 'SendMessage (blocking) returns the completed task',
    run: async (b) => {
      const t = asTask(await b.client.sendMessage(textMessage('hello both')));
      return { state: state(t), answer: answer(t), history: t.history.length };
    },
    expect: { state: 'TASK_STATE_COMPLETED', answer: 'hello both', history: 2 },
  },
  {
    name: 'SendStreamingMessage: the task first, artifact updates, the terminal status last',
    run: (b) => shape(b.client.sendMessageStream(textMessage('streamed words here'))),
    expect: ['task:TASK_STATE_WORKING', 'artifactUpdate', 'status:TASK_STATE_COMPLETED'],
  },
  {
    name: 'GetTask with historyLength',
    run: async (b) => {
      const t = asTask(await b.client.sendMessage(textMessage('remember me')));
      const got = await b.client.getTask(GetTaskRequest.fromJSON({ id: t.id, historyLength: 1 }));
      const none = await b.client.getTask(GetTaskRequest.fromJSON({ id: t.id, historyLength: 0 }));
      return { same: got.id === t.id, state: state(got), history: got.history.length, none: none.history.length };
    },
    expect: { same: true, state: 'TASK_STATE_COMPLETED', history: 1, none: 0 },
  },
  {
    name: 'ListTasks by context, paged',
    run: async (b) => {
      const contextId = randomUUID();
      for (const text of ['one', 'two', 'three']) await b.client.sendMessage(textMessage(text, { contextId }));
      const first = await b.client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 2 }));
      const second = await b.client.listTasks(
        ListTasksRequest.fromJSON({ contextId, pageSize: 2, pageToken: first.nextPageToken }),
      );
      return {
        pages: [first.tasks.length, second.tasks.length],
        total: first.totalSize,
        more: [first.nextPageToken !== '', second.nextPageToken !== ''],
        inContext: [...first.tasks, ...second.tasks].every((t) => t.contextId === contextId),
      };
    },
    expect: { pages: [2, 1], total: 3, more: [true, false], inContext: true },
  },
  {
    name: 'CancelTask ends a working task canceled',
    run: async (b) => {
      const t = await held(b.client);
      const canceled = await b.client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id }));
      return state(canceled);
    },
    expect: 'TASK_STATE_CANCELED',
  },
  {
    name: 'SubscribeToTask: the current task, then its updates until it ends',
    run: async (b) => {
      const t = await held(b.client);
      return shape(b.client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: t.id })), () =>
        b.client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id })),
      );
    },
    expect: ['task:TASK_STATE_WORKING', 'status:TASK_STATE_CANCELED'],
  },
  {
    name: 'GetExtendedAgentCard: the same extended card on all three',
    run: async (b) => {
      const card = await b.client.getAgentCard({});
      const ext = await b.client.transport.getExtendedAgentCard({ tenant: '' }, V('1.0'));
      return {
        public: card.capabilities?.extendedAgentCard,
        extended: ext.capabilities?.extendedAgentCard,
        skills: ext.skills.map((s) => s.id),
        profile: ext.capabilities?.extensions.map((x) => x.uri),
        // Without ARBITER_EXTENDED_CARD_MODEL the model family is not shown.
        model: 'modelFamily' in (ext.capabilities?.extensions[0]?.params ?? {}),
      };
    },
    expect: {
      public: true,
      extended: true,
      skills: ['chat', 'memory', 'fetch-url', 'summaries'],
      profile: ['urn:arbiter:agent-profile:v1'],
      model: false,
    },
  },
  {
    name: 'error: an unknown task is TaskNotFound',
    run: (b) => outcome(b.client.getTask(GetTaskRequest.fromJSON({ id: randomUUID() }))),
    expect: { error: 'TASK_NOT_FOUND' },
    codes: { JSONRPC: -32001, 'HTTP+JSON': 404, GRPC: grpc.NOT_FOUND },
  },
  {
    name: "error: another tenant's task answers exactly like a missing one",
    run: async (b) => {
      const mine = asTask(await b.client.sendMessage(textMessage('private')));
      const missing = randomUUID();
      const theirs = (await outcome(b.stranger.getTask(GetTaskRequest.fromJSON({ id: mine.id })))) as ErrorOutcome;
      const none = (await outcome(b.stranger.getTask(GetTaskRequest.fromJSON({ id: missing })))) as ErrorOutcome;
      const cancel = (await outcome(
        b.stranger.cancelTask(CancelTaskRequest.fromJSON({ id: mine.id })),
      )) as ErrorOutcome;
      assert.equal(theirs.message.replace(mine.id, 'ID'), none.message.replace(missing, 'ID'));
      assert.equal(theirs.code, none.code);
      return { get: theirs.error, cancel: cancel.error, missing: none.error };
    },
    expect: { get: 'TASK_NOT_FOUND', cancel: 'TASK_NOT_FOUND', missing: 'TASK_NOT_FOUND' },
  },
  {
    name: 'a messageId sent again: the same message gets its task, another message is InvalidParams naming the field',
    run: async (b) => {
      const first = textMessage('the first question');
      const t = asTask(await b.client.sendMessage(first));
      const again = asTask(await b.client.sendMessage(first));
      const other = textMessage('a different question');
      other.message!.messageId = first.message!.messageId;
      const refused = (await outcome(b.client.sendMessage(other))) as ErrorOutcome;
      assert.match(refused.message, /message\.messageId/);
      assert.match(refused.message, /already sent with a different message/);
      const code = { JSONRPC: -32602, 'HTTP+JSON': 400, GRPC: grpc.INVALID_ARGUMENT }[b.name];
      return {
        same: again.id === t.id,
        history: again.history.length,
        error: refused.error,
        code: refused.code === code,
      };
    },
    expect: { same: true, history: 2, error: 'INVALID_PARAMS', code: true },
  },
  {
    name: 'error: bad params (pageSize out of range) are InvalidParams',
    run: (b) => outcome(b.client.listTasks(ListTasksRequest.fromJSON({ pageSize: 500 }))),
    expect: { error: 'INVALID_PARAMS' },
    codes: { JSONRPC: -32602, 'HTTP+JSON': 400, GRPC: grpc.INVALID_ARGUMENT },
  },
  {
    name: 'error: canceling a terminal task is TaskNotCancelable',
    run: async (b) => {
      const t = asTask(await b.client.sendMessage(textMessage('done soon')));
      return outcome(b.client.cancelTask(CancelTaskRequest.fromJSON({ id: t.id })));
    },
    expect: { error: 'TASK_NOT_CANCELABLE' },
    codes: { JSONRPC: -32002, 'HTTP+JSON': 400, GRPC: grpc.FAILED_PRECONDITION },
  },
  {
    name: 'error: subscribing to a terminal task is UnsupportedOperation',
    run: async (b) => {
      const t = asTask(await b.client.sendMessage(textMessage('over')));
      return outcome(shape(b.client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: t.id }))));
    },
    expect: { error: 'UNSUPPORTED_OPERATION' },
    codes: { JSONRPC: -32004, 'HTTP+JSON': 400, GRPC: grpc.FAILED_PRECONDITION },
  },
  {
    name: 'error: an unsupported A2A-Version is VersionNotSupported',
    run: (b) => outcome(b.client.transport.getTask(GetTaskRequest.fromJSON({ id: randomUUID() }), V('9.9'))),
    expect: { error: 'VERSION_NOT_SUPPORTED' },
    codes: { JSONRPC: -32009, 'HTTP+JSON': 400, GRPC: grpc.FAILED_PRECONDITION },
  },
];

/**
 * Spec §5.1: every operation behaves the same on every binding. One table
 * of scenarios, each run with the official SDK client over JSON-RPC (§9),
 * HTTP+JSON (§11) and gRPC (§10) against the same agent: the outcomes must
 * be equal, and each error must carry its binding's code from §5.4.
 */
describe('§5.1 functional equivalence: one scenario table, three bindings', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  const bindings: Binding[] = [];
  before(async () => {
    server = await startTestServer({ env: { ...GRPC_ON, ARBITER_ECHO_DELAY_MS: '5' } });
    [a, b] = [await newTenant(server, 'bind-a'), await newTenant(server, 'bind-b')];
    const agent = { id: 'twin', role: 'twin', capabilities: ['/mem', '/fetch', 'summaries'] };
    await newAgent(a, agent);
    await newAgent(b, agent);
    bindings.push(
      {
        name: 'JSONRPC',
        client: await v1Client(server.url, a.token, 'twin'),
        stranger: await v1Client(server.url, b.token, 'twin'),
      },
      {
        name: 'HTTP+JSON',
        client: await restClient(server.url, a.token, 'twin'),
        stranger: await restClient(server.url, b.token, 'twin'),
      },
      {
        name: 'GRPC',
        client: await grpcClient(server.url, a.token, 'twin'),
        stranger: await grpcClient(server.url, b.token, 'twin'),
      },
    );
  });
  after(async () => {
    // Leave nothing held: every `hold` task was canceled by its scenario.
    await server.close();
  });

  it('the clients really use different bindings', () => {
    assert.deepEqual(
      bindings.map((x) => x.client.transport.protocolName),
      ['JSONRPC', 'HTTP+JSON', 'GRPC'],
    );
  });

  for (const s of SCENARIOS) {
    it(s.name, async () => {
      const results: Record<string, unknown> = {};
      for (const binding of bindings) {
        const got = await s.run(binding);
        if (s.codes) {
          const e = got as ErrorOutcome;
          assert.equal(e.code, s.codes[binding.name], `${binding.name}: ${JSON.stringify(got)}`);
          results[binding.name] = { error: e.error };
        } else {
          results[binding.name] = got;
        }
      }
      assert.deepEqual(results, { JSONRPC: s.expect, 'HTTP+JSON': s.expect, GRPC: s.expect });
    });
  }

  it('no scenario left a task working', async () => {
    const client = bindings[0].client;
    await waitFor(async () => {
      const r = await client.listTasks(ListTasksRequest.fromJSON({ status: 'TASK_STATE_WORKING', pageSize: 10 }));
      return r.tasks.length === 0 ? true : undefined;
    });
  });
});
