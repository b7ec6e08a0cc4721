import { type AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import {
  Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import * as grpc from '@grpc/grpc-js';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { randomUUID } from 'node:crypto';
import { PATIENCE_MS } from './patience.js';

/** A fetch that adds the tenant's bearer token, as an A2A client's auth hook would. */
export function authFetch(token: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

export function cardUrl(baseUrl: string, agentId: string): string {
  return `${baseUrl}/v1/a2a/agents/${agentId}/agent-card.json`;
}

/** The official v1.0 client, built the documented way: card resolution through `ClientFactory`. */
export async function v1Client(baseUrl: string, token: string, agentId = 'index'): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch(token) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(token) }),
    }),
  );
  return factory.createFromUrl(cardUrl(baseUrl, agentId), '');
}

/** The official v1.0 client over the HTTP+JSON binding (spec §11): the factory picks the card's `HTTP+JSON` interface. */
export async function restClient(baseUrl: string, token: string, agentId = 'index'): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new RestTransportFactory({ fetchImpl: authFetch(token) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(token) }),
      preferredTransports: ['HTTP+JSON'],
    }),
  );
  return factory.createFromUrl(cardUrl(baseUrl, agentId), '');
}

/**
 * The official v1.0 client over the gRPC binding (spec §10): the factory
 * picks the card's `GRPC` interface, whose `tenant` (the agent id) the SDK
 * puts into every request. The bearer goes into every call's metadata
 * (§10.2) as per-call credentials, so direct transport calls carry it too.
 */
export async function grpcClient(baseUrl: string, token: string, agentId = 'index'): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory({ grpcCallOptions: { credentials: bearerCredentials(token) } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(token) }),
      preferredTransports: ['GRPC'],
    }),
  );
  return factory.createFromUrl(cardUrl(baseUrl, agentId), '');
}

/** `authorization: Bearer …` in a call's metadata (grpc-js sends call credentials on plaintext channels too). */
export function bearerCredentials(token: string): grpc.CallCredentials {
  return grpc.credentials.createFromMetadataGenerator((_params, callback) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    callback(null, metadata);
  });
}

/** The SDK's v0.3 compat client: the same `Client` API over the v0.3 JSON-RPC wire. */
export async function v03Client(baseUrl: string, token: string, agentId = 'index'): Promise<Client> {
  const resolver = new DefaultAgentCardResolver({ fetchImpl: authFetch(token) });
  const card: AgentCard = await resolver.resolve(cardUrl(baseUrl, agentId), '');
  const transport = new LegacyJsonRpcTransport({
    endpoint: `${baseUrl}/v1/a2a/agents/${agentId}`,
    fetchImpl: authFetch(token),
  });
  return new Client(transport, card);
}

export function textMessage(
  text: string,
  opts: { taskId?: string; contextId?: string; returnImmediately?: boolean; historyLength?: number } = {},
): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(opts.taskId ? { taskId: opts.taskId } : {}),
      ...(opts.contextId ? { contextId: opts.contextId } : {}),
    },
    configuration: {
      ...(opts.returnImmediately ? { returnImmediately: true } : {}),
      ...(opts.historyLength !== undefined ? { historyLength: opts.historyLength } : {}),
    },
  });
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: any;
}

/** Reads a whole SSE response (it must end) into events; comments are counted separately. */
export async function readSse(res: Response): Promise<{ events: SseEvent[]; comments: number }> {
  return parseSse(await res.text());
}

/**
 * Reads an SSE response like `readSse`, and says when its first event has
 * arrived: from then on the stream is open on the server (subscribed, held),
 * so the test can act on it — cancel, continue, revoke — without guessing
 * how long that takes. `opened` rejects if the response ends with no event.
 */
export function followSse(response: Response | Promise<Response>): {
  opened: Promise<void>;
  ended: Promise<{ events: SseEvent[]; comments: number }>;
} {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const opened = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  opened.catch(() => undefined); // reported to whoever awaits it
  const ended = (async () => {
    const res = await response;
    const decoder = new TextDecoder();
    let text = '';
    let seen = false;
    if (res.body) {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        if (
          !seen &&
          text
            .split('\n\n')
            .slice(0, -1)
            .some((b) => /^data: /m.test(b))
        ) {
          seen = true;
          open();
        }
      }
    }
    text += decoder.decode();
    if (!seen) fail(new Error(`the stream ended before its first event: HTTP ${res.status} ${text.slice(0, 500)}`));
    return parseSse(text);
  })();
  ended.catch((err: Error) => fail(err));
  return { opened, ended };
}

function parseSse(text: string): { events: SseEvent[]; comments: number } {
  const events: SseEvent[] = [];
  let comments = 0;
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    const ev: Partial<SseEvent> = {};
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments++;
      else if (line.startsWith('id: ')) ev.id = line.slice(4);
      else if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length) events.push({ ...ev, data: JSON.parse(data.join('\n')) });
  }
  return { events, comments };
}

/** POSTs one JSON-RPC request. */
export async function rpc(
  baseUrl: string,
  token: string | undefined,
  agentId: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${baseUrl}/v1/a2a/agents/${agentId}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The header that asks for the v1.0 dialect (§3.6.2). */
export const V1: Record<string, string> = { 'a2a-version': '1.0' };
/** No A2A-Version header: the request is read in the v0.3 dialect (§3.6.2). */
export const V03: Record<string, string> = {};

/** A JSON-RPC reply (§9): its `result` or its `error`, loosely typed as tests read them. */
export interface RpcReply {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

/** What a test sets on a v1.0 SendMessage besides its text. */
export interface SendOptions {
  taskId?: string;
  contextId?: string;
  /** A chosen messageId (to resend one); a fresh one otherwise. */
  messageId?: string;
  /** More parts after the text (files, data). */
  parts?: Record<string, unknown>[];
  /** §3.2.2: the reply is the task as soon as it exists. */
  returnImmediately?: boolean;
  /** More of SendMessageConfiguration (historyLength, taskPushNotificationConfig …). */
  configuration?: Record<string, unknown>;
}

/** The params of a v1.0 SendMessage or SendStreamingMessage (ProtoJSON): one user message. */
export function sendParams(text: string, opts: SendOptions = {}): Record<string, unknown> {
  const { taskId, contextId, messageId = randomUUID(), parts = [], returnImmediately, configuration } = opts;
  const config = { ...configuration, ...(returnImmediately ? { returnImmediately: true } : {}) };
  return {
    message: {
      messageId,
      role: 'ROLE_USER',
      parts: [{ text }, ...parts],
      ...(taskId ? { taskId } : {}),
      ...(contextId ? { contextId } : {}),
    },
    ...(Object.keys(config).length ? { configuration: config } : {}),
  };
}

/**
 * Ordinary JSON-RPC calls on one agent, for tests whose subject is not the
 * wire (tasks, quotas, replicas, push …): the envelope is built here, once.
 * Where the envelope itself is under test, send a body with `rpc`.
 * `headers` defaults to v1.0 (`V1`); `V03` for v0.3 method names and shapes.
 */
export function a2a(baseUrl: string, token: string | undefined, agent = 'index', headers: Record<string, string> = V1) {
  /** The HTTP response, for a test that reads its status or headers, or its stream by hand. */
  const post = (method: string, params?: unknown): Promise<Response> =>
    rpc(baseUrl, token, agent, { jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) }, headers);
  /** The parsed reply, result or error. */
  const call = async (method: string, params?: unknown): Promise<RpcReply> =>
    (await post(method, params)).json() as Promise<RpcReply>;
  return {
    post,
    call,
    send: (text: string, opts?: SendOptions) => call('SendMessage', sendParams(text, opts)),
    /** SendStreamingMessage, its SSE frames followed as they come (see `followSse`). */
    stream: (text: string, opts?: SendOptions) => followSse(post('SendStreamingMessage', sendParams(text, opts))),
    subscribe: (id: string) => followSse(post('SubscribeToTask', { id })),
    get: (id: string) => call('GetTask', { id }),
    cancel: (id: string) => call('CancelTask', { id }),
    list: (params: Record<string, unknown> = {}) => call('ListTasks', params),
  };
}

/**
 * Polls `fn` until it gives a value. The bound (`PATIENCE_MS`, minutes) only
 * keeps a broken test from hanging: a test waits for what it needs, however
 * long a loaded machine takes, and never asserts how long that was.
 */
export async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = PATIENCE_MS): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting (${Math.round(timeoutMs / 1000)} s)`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A v1.0 task's answer (ProtoJSON): the text of its `response` artifacts — §3.7, the status carries no copy. */
export function answerOf(task: { artifacts?: { name?: string; parts: { text?: string }[] }[] }): string {
  return (task.artifacts ?? [])
    .filter((a) => a.name === 'response')
    .map((a) => a.parts.map((p) => p.text ?? '').join(''))
    .join('');
}
