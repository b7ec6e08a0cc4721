import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { AgentCard, Message, Part, Task, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { A2AService, grpcService, UserBuilder as GrpcUserBuilder } from '@a2a-js/sdk/server/grpc';
import type * as v03 from '@a2a-js/sdk-v03';
import {
  DefaultRequestHandler as V03RequestHandler,
  InMemoryTaskStore as V03TaskStore,
  type AgentExecutor as V03Executor,
} from '@a2a-js/sdk-v03/server';
import { jsonRpcHandler as v03JsonRpc, UserBuilder as V03UserBuilder } from '@a2a-js/sdk-v03/server/express';

/**
 * Upstreams for translation across bindings and dialects, real SDK servers on loopback with in-memory stores and
 * no push: `startV03Upstream()` is the official SDK 0.3.14 (v0.3 JSON-RPC only); `startGrpcUpstream()` the SDK 1.3
 * server exposing only gRPC (its card, over HTTP, names one GRPC interface). Both answer a message the same way:
 * an `echo` artifact with the caller's non-text parts as they arrived, then the upstream's own file (bytes), file
 * (URL) and data parts, and complete with "<name> heard: <text>". `received` keeps every message's parts as the
 * upstream's SDK saw them (v0.3 JSON, or v1.0 ProtoJSON).
 */
export interface TranslationUpstream {
  url: string;
  received: unknown[][];
  /** The authorization each request arrived with. */
  authorizations: string[];
  close(): Promise<void>;
}

/** The upstream's own file, and what its other parts say. */
export const UPSTREAM_FILE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10]);
export const UPSTREAM_URL = 'https://files.example/report.pdf';

const listen = (app: express.Express): Promise<Server> =>
  new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
const stop = (s: Server): Promise<void> =>
  new Promise((r) => {
    s.closeAllConnections();
    s.close(() => r());
  });

/**
 * The SDK 0.3.14 server. A message whose text is `leak` is refused before the SDK sees it, with a JSON-RPC error
 * whose message quotes the authorization it came with (an upstream that echoes credentials into its errors).
 */
export async function startV03Upstream(): Promise<TranslationUpstream> {
  const received: unknown[][] = [];
  const authorizations: string[] = [];
  const exec: V03Executor = {
    execute(ctx, bus) {
      const { taskId, contextId, userMessage } = ctx;
      received.push(userMessage.parts);
      const text = userMessage.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
      const at = () => new Date().toISOString();
      bus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'working', timestamp: at() },
        history: [userMessage],
      });
      bus.publish({
        kind: 'artifact-update',
        taskId,
        contextId,
        artifact: {
          artifactId: 'echo',
          name: 'echo',
          parts: [
            ...userMessage.parts.filter((p) => p.kind !== 'text'),
            { kind: 'file', file: { bytes: UPSTREAM_FILE.toString('base64'), mimeType: 'image/png', name: 'up.png' } },
            { kind: 'file', file: { uri: UPSTREAM_URL, mimeType: 'application/pdf', name: 'report.pdf' } },
            { kind: 'data', data: { from: 'v03', n: 3 } },
          ],
        },
        lastChunk: true,
      });
      bus.publish({
        kind: 'status-update',
        taskId,
        contextId,
        final: true,
        status: {
          state: 'completed',
          timestamp: at(),
          message: {
            kind: 'message',
            role: 'agent',
            messageId: randomUUID(),
            taskId,
            contextId,
            parts: [{ kind: 'text', text: `v03 heard: ${text}` }],
          },
        },
      });
      bus.finished();
      return Promise.resolve();
    },
    cancelTask: () => Promise.resolve(),
  };
  let url = '';
  const card = (): v03.AgentCard => ({
    name: 'Legacy Vendor',
    description: 'An agent on the A2A SDK 0.3',
    url: `${url}/rpc`,
    protocolVersion: '0.3.0',
    preferredTransport: 'JSONRPC',
    version: '1',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain', 'application/octet-stream'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'legacy', name: 'Legacy', description: 'v0.3 things', tags: ['legacy'] }],
  });
  const handler = new V03RequestHandler(card(), new V03TaskStore(), exec);
  const app = express();
  app.get('/rpc/agent-card.json', (req, res) => {
    // A v0.3 server knows no v1.0 card.
    if (req.headers['a2a-version'] === '1.0') return void res.status(400).json({ error: 'unsupported version' });
    res.json(card());
  });
  app.post('/rpc', express.json({ limit: '20mb' }), (req, res, next) => {
    authorizations.push(String(req.headers.authorization ?? ''));
    const body = req.body as { id?: unknown; params?: { message?: { parts?: { text?: string }[] } } };
    if (body.params?.message?.parts?.some((p) => p.text === 'leak')) {
      res.json({
        jsonrpc: '2.0',
        id: body.id ?? null,
        error: { code: -32603, message: `internal error: the key "${req.headers.authorization}" is not allowed` },
      });
      return;
    }
    next();
  });
  app.use('/rpc', v03JsonRpc({ requestHandler: handler, userBuilder: V03UserBuilder.noAuthentication }));
  const server = await listen(app);
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${url}/rpc`, received, authorizations, close: () => stop(server) };
}

const part = (json: Record<string, unknown>): Part => Part.fromJSON(json);

/** The SDK 1.3 server on gRPC only; its card (over HTTP, at `<url>/agent-card.json`) names only that interface. */
/** `grpcHost`: where the gRPC service listens (its card is served on 127.0.0.1 either way). */
export async function startGrpcUpstream(grpcHost = '127.0.0.1'): Promise<TranslationUpstream> {
  const received: unknown[][] = [];
  const authorizations: string[] = [];
  const exec: AgentExecutor = {
    execute(ctx, bus) {
      const { taskId, contextId, userMessage } = ctx;
      received.push((Message.toJSON(userMessage) as { parts: unknown[] }).parts);
      const text = userMessage.parts.map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')).join('');
      const at = () => new Date().toISOString();
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: taskId,
            contextId,
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
            history: [Message.toJSON(userMessage)],
          }),
        ),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          metadata: undefined,
          artifact: {
            artifactId: 'echo',
            name: 'echo',
            description: '',
            extensions: [],
            metadata: undefined,
            parts: [
              ...userMessage.parts.filter((p) => p.content?.$case !== 'text'),
              part({ raw: UPSTREAM_FILE.toString('base64'), mediaType: 'image/png', filename: 'up.png' }),
              part({ url: UPSTREAM_URL, mediaType: 'application/pdf', filename: 'report.pdf' }),
              part({ data: { from: 'grpc', n: 3 } }),
            ],
          },
          append: false,
          lastChunk: true,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          metadata: undefined,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            timestamp: at(),
            message: Message.fromJSON({
              messageId: randomUUID(),
              role: 'ROLE_AGENT',
              taskId,
              contextId,
              parts: [{ text: `grpc heard: ${text}` }],
            }),
          },
        }),
      );
      bus.finished();
      return Promise.resolve();
    },
    cancelTask: () => Promise.resolve(),
  };
  const grpcServer = new grpc.Server();
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(`${grpcHost}:0`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const card = AgentCard.fromJSON({
    name: 'Grpc Vendor',
    description: 'An agent on the A2A SDK 1.3, gRPC only',
    supportedInterfaces: [{ url: `${grpcHost}:${port}`, protocolBinding: 'GRPC', protocolVersion: '1.0' }],
    version: '1',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'grpc', name: 'Grpc', description: 'gRPC things', tags: ['grpc'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), exec);
  grpcServer.addService(
    A2AService,
    grpcService({
      requestHandler: handler,
      userBuilder: (call) => {
        authorizations.push(String(call.metadata.get('authorization')[0] ?? ''));
        return GrpcUserBuilder.noAuthentication();
      },
    }),
  );
  const app = express();
  app.get('/agent-card.json', (_req, res) => res.json(AgentCard.toJSON(card)));
  const http = await listen(app);
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    received,
    authorizations,
    async close() {
      await stop(http);
      await new Promise<void>((r) => grpcServer.tryShutdown(() => r()));
    },
  };
}

/**
 * An upstream that refuses every message with a typed A2A error whose message quotes the credential it came with
 * (the raw token, and its authorization header). Two registry entries: `<url>/rpc`, a v1.0 JSON-RPC agent whose
 * card says it streams, refusing with -32602 (InvalidParams); `<url>/rest`, a v1.0 HTTP+JSON agent that does not
 * stream, refusing with HTTP 400 and an `ErrorInfo` CONTENT_TYPE_NOT_SUPPORTED. `sends` counts the refused sends.
 */
export async function startRefusingUpstream(): Promise<TranslationUpstream & { rest: string; sends: () => number }> {
  let sends = 0;
  const authorizations: string[] = [];
  let url = '';
  const card = (binding: 'JSONRPC' | 'HTTP+JSON', path: string, streaming: boolean) => ({
    name: 'Refusing Vendor',
    description: 'refuses everything',
    supportedInterfaces: [{ url: `${url}${path}`, protocolBinding: binding, protocolVersion: '1.0' }],
    version: '1',
    capabilities: { streaming, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'no', name: 'No', description: 'says no', tags: ['no'] }],
  });
  const quoted = (auth: string) => `the key ${auth.replace(/^Bearer /, '')} (sent as "${auth}") may not`;
  const app = express();
  app.get('/rpc/agent-card.json', (_req, res) => res.json(card('JSONRPC', '/rpc', true)));
  app.get('/rest/agent-card.json', (_req, res) => res.json(card('HTTP+JSON', '/rest', false)));
  app.post('/rpc', express.json(), (req, res) => {
    sends++;
    const auth = String(req.headers.authorization ?? '');
    authorizations.push(auth);
    const id = (req.body as { id?: unknown }).id ?? null;
    res.json({ jsonrpc: '2.0', id, error: { code: -32602, message: `message.parts: ${quoted(auth)} send this` } });
  });
  app.post(/^\/rest\/.+/, express.json(), (req, res) => {
    sends++;
    const auth = String(req.headers.authorization ?? '');
    authorizations.push(auth);
    res.status(400).json({
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: `text/plain is not accepted: ${quoted(auth)} send it`,
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'CONTENT_TYPE_NOT_SUPPORTED',
            domain: 'a2a-protocol.org',
          },
        ],
      },
    });
  });
  const server = await listen(app);
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${url}/rpc`,
    rest: `${url}/rest`,
    received: [],
    authorizations,
    sends: () => sends,
    close: () => stop(server),
  };
}
