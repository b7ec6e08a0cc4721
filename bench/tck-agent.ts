/**
 * The agent the compatibility kit (the A2A TCK) is run against: the official @a2a-js/sdk server alone —
 * DefaultRequestHandler, its in-memory task store, no push — serving JSON-RPC and HTTP+JSON, with the card at
 * the origin's well-known path and both bindings at the origin's root (JSON-RPC: `POST /`), where the kit looks
 * for them.
 *
 * It behaves as the kit expects of its system under test (docs/SUT_REQUIREMENTS.md and the reference SUTs):
 *   a first message       the task (submitted), working, a `response` artifact, then input-required with a
 *                         reply: the task stays open, so the kit can continue it, cancel it and read it
 *   a follow-up message   completes the task with a reply
 *   a message whose id starts with `test-resubscribe-message-id`
 *                         stays working for `holdMs` (at least twice the kit's streaming timeout), then
 *                         completes, so the kit can resubscribe to it while it runs
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Message, Role, Task, TaskState, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

export const RESUBSCRIBE_PREFIX = 'test-resubscribe-message-id';

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function reply(taskId: string, contextId: string, id: string, value: string): Message {
  return {
    messageId: id,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [text(value)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function tckExecutor(holdMs: number): AgentExecutor {
  const holding = new Map<string, () => void>();
  return {
    async execute(ctx, bus) {
      const { taskId, contextId } = ctx;
      const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
      const at = () => new Date().toISOString();
      const status = (state: TaskState, message?: Message) =>
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          metadata: undefined,
          status: { state, message, timestamp: at() },
        });
      // Every stream starts with the task (the SDK's rule for SendStreamingMessage), a continuation's too.
      bus.publish(
        AgentEvent.task(
          ctx.task
            ? { ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: at() } }
            : Task.fromJSON({
                id: taskId,
                contextId,
                status: { state: 'TASK_STATE_SUBMITTED', timestamp: at() },
                history: [Message.toJSON(ctx.userMessage)],
              }),
        ),
      );
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      if (ctx.userMessage.messageId.startsWith(RESUBSCRIBE_PREFIX)) {
        const released = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), holdMs);
          holding.set(taskId, () => {
            clearTimeout(timer);
            resolve(false);
          });
        });
        holding.delete(taskId);
        if (!released) return; // canceled meanwhile: the cancel published the final status
        bus.publish(
          status(TaskState.TASK_STATE_COMPLETED, reply(taskId, contextId, `${taskId}-held`, `held: ${input}`)),
        );
        bus.finished();
        return;
      }
      if (ctx.task) {
        bus.publish(
          status(TaskState.TASK_STATE_COMPLETED, reply(taskId, contextId, `${taskId}-done`, `done: ${input}`)),
        );
        bus.finished();
        return;
      }
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          metadata: undefined,
          artifact: {
            artifactId: `${taskId}-response`,
            name: 'response',
            description: 'Agent response to user message.',
            parts: [text(`Hello World! You said: '${input}'.`)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
        }),
      );
      bus.publish(
        status(
          TaskState.TASK_STATE_INPUT_REQUIRED,
          reply(taskId, contextId, `${taskId}-ask`, 'Anything else? Reply to this task to finish it.'),
        ),
      );
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      holding.get(taskId)?.();
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          metadata: undefined,
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        }),
      );
      bus.finished();
    },
  };
}

export interface TckAgent {
  /** The origin: the card at `/.well-known/agent-card.json`, JSON-RPC (`POST /`) and HTTP+JSON at the root. */
  url: string;
  close(): Promise<void>;
}

export async function startTckAgent(holdMs: number, port = 0): Promise<TckAgent> {
  const app = express();
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: 'SDK TCK agent',
    description: 'An agent built on the official A2A SDK (in-memory task store, no push), for the A2A TCK',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'tck', name: 'TCK agent', description: 'answers, then asks for more', tags: ['tck'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), tckExecutor(holdMs));
  const userBuilder = UserBuilder.noAuthentication;
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card) }));
  app.post('/', jsonRpcHandler({ requestHandler: handler, userBuilder }));
  app.use('/', restHandler({ requestHandler: handler, userBuilder }));
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
