/**
 * The reference for `npm run bench`: an A2A server built from the official
 * @a2a-js/sdk (DefaultRequestHandler, in-memory task store, its Express
 * JSON-RPC handler) with the same echo behaviour as Arbiter's offline model:
 * the input streamed back in N chunks, optionally delayed.
 */
import express from 'express';
import { AgentCard, Message, Task, TaskState, Role } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { chunkText } from '../src/orchestrator/providers/echo.model.js';

const chunks = Number(process.env.ARBITER_ECHO_CHUNKS ?? 4);
const delayMs = Number(process.env.ARBITER_ECHO_DELAY_MS ?? 0);
const port = Number(process.env.PORT ?? 0);

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
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`listening on ${url}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
