/**
 * The reference for `npm run bench`: an A2A server built from the official
 * @a2a-js/sdk (DefaultRequestHandler, its Express JSON-RPC handler) with the
 * same echo behaviour as Arbiter's offline model: the input streamed back in
 * N chunks, optionally delayed.
 *
 * The task store is chosen by `REFERENCE_STORE`: `memory` (default, the SDK's
 * InMemoryTaskStore) or `database` (the SDK's durable DatabaseTaskStore on a
 * Kysely PostgresDialect over a pg Pool of 10, at `REFERENCE_DATABASE_URL`;
 * its table must already exist: `a2a-db upgrade --url <url>`).
 */
import express from 'express';
import { AgentCard, Message, Task, TaskState, Role } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type TaskStore,
} from '@a2a-js/sdk/server';
import { DatabaseTaskStore } from '@a2a-js/sdk/server/database';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { chunkText } from '../src/orchestrator/providers/echo.model.js';

const chunks = Number(process.env.ARBITER_ECHO_CHUNKS ?? 4);
const delayMs = Number(process.env.ARBITER_ECHO_DELAY_MS ?? 0);
const port = Number(process.env.PORT ?? 0);
const storeKind = process.env.REFERENCE_STORE ?? 'memory';

let db: Kysely<unknown> | undefined;
let taskStore: TaskStore;
if (storeKind === 'database') {
  const connectionString = process.env.REFERENCE_DATABASE_URL;
  if (!connectionString) throw new Error('REFERENCE_STORE=database needs REFERENCE_DATABASE_URL');
  db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString, max: 10 }) }) });
  taskStore = new DatabaseTaskStore(db);
} else if (storeKind === 'memory') {
  taskStore = new InMemoryTaskStore();
} else {
  throw new Error(`REFERENCE_STORE must be memory or database, not ${storeKind}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');
    const base = { taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined };
    bus.publish(
      AgentEvent.task(
        Task.fromJSON({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date().toISOString() },
          history: [Message.toJSON(ctx.userMessage)],
        }),
      ),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        ...base,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      }),
    );
    const artifactId = `${ctx.taskId}-text-0`;
    let i = 0;
    for (const chunk of chunkText(input, chunks)) {
      if (delayMs > 0) await sleep(delayMs);
      bus.publish(
        AgentEvent.artifactUpdate({
          ...base,
          artifact: {
            artifactId,
            name: 'response',
            description: '',
            parts: [{ content: { $case: 'text', value: chunk }, metadata: undefined, filename: '', mediaType: '' }],
            metadata: undefined,
            extensions: [],
          },
          append: i > 0,
          lastChunk: false,
        }),
      );
      i++;
    }
    const reply: Message = {
      messageId: `${ctx.taskId}-r0`,
      contextId: ctx.contextId,
      taskId: ctx.taskId,
      role: Role.ROLE_AGENT,
      parts: [{ content: { $case: 'text', value: input }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    bus.publish(
      AgentEvent.statusUpdate({
        ...base,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: new Date().toISOString() },
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  const url = `http://127.0.0.1:${addr.port}`;
  const card = AgentCard.fromJSON({
    name: 'reference-echo',
    description: 'SDK reference echo agent',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: '1',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['echo'] }],
  });
  const handler = new DefaultRequestHandler(card, taskStore, executor);
  // Its card, where a gateway looks for it (`<url>/agent-card.json`): the `arbiter-proxy` target's upstream.
  const cardJson = AgentCard.toJSON(card);
  app.get('/rpc/agent-card.json', (_req, res) => void res.json(cardJson));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`listening on ${url} (store: ${storeKind})\n`);
});
const stop = () => {
  server.closeAllConnections();
  server.close(() => {
    void (db ? db.destroy() : Promise.resolve()).finally(() => process.exit(0));
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
