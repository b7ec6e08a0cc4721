import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Message, Role, Task, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';

/**
 * A2A servers built from the official SDK, as remote peers for outbound
 * tests. The input picks the behaviour:
 *   `artifacts-only <text>`  the reply is only artifacts (a text part and a data part), no status message
 *   `hold`                   stays working until canceled
 *   anything else            completes with "<name> heard: <input>" as the status message
 */
function executor(name: string, canceled: Set<string>): AgentExecutor {
  const waiting = new Map<string, () => void>();
  const text = (value: string) => ({
    content: { $case: 'text' as const, value },
    metadata: undefined,
    filename: '',
    mediaType: '',
  });
  return {
    async execute(ctx, bus) {
      const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');
      const base = { taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined };
      const at = () => new Date().toISOString();
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: ctx.taskId,
            contextId: ctx.contextId,
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
            history: [Message.toJSON(ctx.userMessage)],
          }),
        ),
      );
      if (input === 'hold') {
        await new Promise<void>((resolve) => waiting.set(ctx.taskId, resolve));
        return;
      }
      if (input.startsWith('artifacts-only')) {
        bus.publish(
          AgentEvent.artifactUpdate({
            ...base,
            artifact: {
              artifactId: 'a1',
              name: 'result',
              description: '',
              parts: [
                text(`artifact text for ${input.slice('artifacts-only'.length).trim()}`),
                { content: { $case: 'data', value: { score: 7 } }, metadata: undefined, filename: '', mediaType: '' },
              ],
              metadata: undefined,
              extensions: [],
            },
            append: false,
            lastChunk: true,
          }),
        );
        bus.publish(
          AgentEvent.statusUpdate({
            ...base,
            status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: at() },
          }),
        );
        bus.finished();
        return;
      }
      const reply: Message = {
        messageId: `${ctx.taskId}-r`,
        contextId: ctx.contextId,
        taskId: ctx.taskId,
        role: Role.ROLE_AGENT,
        parts: [text(`${name} heard: ${input}`)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      bus.publish(
        AgentEvent.statusUpdate({
          ...base,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: at() },
        }),
      );
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      canceled.add(taskId);
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          metadata: undefined,
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        }),
      );
      bus.finished();
      waiting.get(taskId)?.();
    },
  };
}

export interface ReferenceAgent {
  url: string;
  /** Remote task ids the executor was asked to cancel. */
  canceled: Set<string>;
  /** How many GetTask calls it answered: a caller polling a task it sent knows that task's id. */
  getTasks: { count: number };
  /** Card requests (v1: `/rpc/agent-card.json`; v03: `/.well-known/agent-card.json`), and how many were answered 304. */
  cardFetches: { count: number; notModified: number };
  close(): Promise<void>;
}

/**
 * Starts an SDK server on loopback. `v1`: a v1.0 card at `<url>/rpc/agent-card.json` (the seed's rule).
 * `v03`: only a v0.3 interface, its card (v0.3 JSON) only at `/.well-known/agent-card.json`.
 * Extra routes: `/broken/agent-card.json` (a card whose endpoint is closed), `/rpc-error` and `/garbage`
 * (endpoints answering a JSON-RPC error / a non-JSON-RPC body), `/hop/agent-card.json` (a redirect to `to`).
 */
export async function startReferenceAgent(
  kind: 'v1' | 'v03',
  opts: { redirectTo?: string } = {},
): Promise<ReferenceAgent> {
  const app = express();
  const canceled = new Set<string>();
  const cardFetches = { count: 0, notModified: 0 };
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const version = kind === 'v1' ? '1.0' : '0.3';
  const name = kind === 'v1' ? 'ref-v1' : 'ref-v03';
  const card = (rpcUrl: string) =>
    AgentCard.fromJSON({
      name,
      description: `SDK reference agent speaking A2A ${version}`,
      supportedInterfaces: [{ url: rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: version }],
      version: '1',
      capabilities: { streaming: true, pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'listen', name: 'listen', description: 'repeats what it heard', tags: ['echo'] }],
    });
  const getTasks = { count: 0 };
  class CountingHandler extends DefaultRequestHandler {
    override getTask(
      ...args: Parameters<DefaultRequestHandler['getTask']>
    ): ReturnType<DefaultRequestHandler['getTask']> {
      getTasks.count++;
      return super.getTask(...args);
    }
  }
  const handler = new CountingHandler(card(`${url}/rpc`), new InMemoryTaskStore(), executor(name, canceled));
  if (kind === 'v1') {
    app.get('/rpc/agent-card.json', (req, res) => {
      cardFetches.count++;
      const etag = '"card-v1"';
      res.setHeader('ETag', etag);
      if (req.headers['if-none-match'] === etag) {
        cardFetches.notModified++;
        res.status(304).end();
        return;
      }
      res.json(AgentCard.toJSON(card(`${url}/rpc`)));
    });
    app.get('/broken/agent-card.json', (_req, res) => {
      res.json(AgentCard.toJSON(card('http://127.0.0.1:1/rpc')));
    });
    app.get('/rpc-error/agent-card.json', (_req, res) => {
      res.json(AgentCard.toJSON(card(`${url}/rpc-error`)));
    });
    app.post('/rpc-error', express.json(), (req, res) => {
      // Like a careless server, its error repeats the caller's credential, with its scheme and without.
      const auth = req.headers.authorization;
      const key = auth ? ` (the key ${auth.replace(/^Bearer /, '')}, sent as "${auth}")` : '';
      res.json({
        jsonrpc: '2.0',
        id: (req.body as { id?: unknown }).id ?? null,
        error: { code: -32603, message: `remote exploded${key}` },
      });
    });
    app.get('/rpc-mirror/agent-card.json', (_req, res) => {
      res.json(AgentCard.toJSON(card(`${url}/rpc-mirror`)));
    });
    app.post('/rpc-mirror', express.json(), (req, res) => {
      // A reply that quotes the credential the request came with.
      const message = {
        messageId: 'mirror-1',
        role: 'ROLE_AGENT',
        parts: [{ text: `you sent ${req.headers.authorization}` }],
      };
      res.json({ jsonrpc: '2.0', id: (req.body as { id?: unknown }).id ?? null, result: { message } });
    });
    app.get('/garbage/agent-card.json', (_req, res) => {
      res.json(AgentCard.toJSON(card(`${url}/garbage`)));
    });
    app.post('/garbage', (_req, res) => {
      res.json({ hello: 'not json-rpc' });
    });
    app.get('/notacard/agent-card.json', (_req, res) => {
      res.json({ something: 'else' });
    });
    if (opts.redirectTo) {
      const to = opts.redirectTo;
      app.get('/hop/agent-card.json', (_req, res) => res.redirect(302, to));
    }
    app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  } else {
    app.use('/.well-known/agent-card.json', (_req, _res, next) => {
      cardFetches.count++;
      next();
    });
    app.use('/.well-known/agent-card.json', legacyAgentCardRouter({ agentCardProvider: handler }));
    app.use(
      '/rpc',
      jsonRpcHandler({
        requestHandler: handler,
        userBuilder: UserBuilder.noAuthentication,
        legacyCompat: { enabled: true },
      }),
    );
  }
  return {
    url,
    canceled,
    getTasks,
    cardFetches,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
