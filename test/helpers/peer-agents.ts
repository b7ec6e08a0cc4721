import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Message, Role, Task, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';

/**
 * Scripted stand-ins for third-party A2A servers Arbiter delegates to, on
 * loopback. Both are the official SDK's server classes speaking the v0.3
 * JSON-RPC wire format, as the real ones do (they are built on
 * `@a2a-js/sdk` 0.3), and behave as the real ones were seen to:
 *
 * - `startGeminiLike()`, like `@google/gemini-cli-a2a-server`: card at
 *   `/.well-known/agent-card.json`, JSON-RPC at `/`. It speaks only in
 *   interim `working` status messages (text, and data parts for its tool
 *   calls), which the SDK keeps in the task's history, and ends its turn
 *   `input-required` with no status message and no artifacts. Input
 *   `finish …` ends `completed` instead, still with no status message.
 * - `startVoltLike(agentId)`, like `@voltagent/a2a-server`: the card only at
 *   `/.well-known/<agentId>/agent-card.json`, JSON-RPC at `/a2a/<agentId>`;
 *   it completes with "<agentId> heard: <input>" as the status message.
 *
 * `requests` lists every request's method and path.
 */
export interface PeerAgent {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

const textPart = (value: string) => ({
  content: { $case: 'text' as const, value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function agentMessage(taskId: string, contextId: string, parts: Message['parts']): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const inputOf = (m: Message): string =>
  m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');

function geminiExecutor(): AgentExecutor {
  return {
    execute(ctx, bus) {
      const input = inputOf(ctx.userMessage);
      const { taskId, contextId } = ctx;
      const at = () => new Date().toISOString();
      const status = (state: TaskState, kind: string, message?: Message) =>
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message, timestamp: at() },
          metadata: { coderAgent: { kind }, model: 'gemini-2.5-pro' },
        });
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: taskId,
            contextId,
            status: { state: 'TASK_STATE_SUBMITTED', timestamp: at() },
            history: [Message.toJSON(ctx.userMessage)],
          }),
        ),
      );
      bus.publish(status(TaskState.TASK_STATE_WORKING, 'state-change'));
      const say = (text: string) =>
        bus.publish(
          status(TaskState.TASK_STATE_WORKING, 'text-content', agentMessage(taskId, contextId, [textPart(text)])),
        );
      say(`Looking into "${input}".`);
      bus.publish(
        status(
          TaskState.TASK_STATE_WORKING,
          'tool-call-update',
          agentMessage(taskId, contextId, [
            {
              content: {
                $case: 'data',
                value: { request: { callId: 'c1', name: 'list_directory', args: { path: '.' } }, status: 'success' },
              },
              metadata: undefined,
              filename: '',
              mediaType: '',
            },
          ]),
        ),
      );
      const finish = input.startsWith('finish');
      say(finish ? 'All done: nothing needed changing.' : 'Which file should I open: a.ts or b.ts?');
      bus.publish(
        status(finish ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_INPUT_REQUIRED, 'state-change'),
      );
      bus.finished();
      return Promise.resolve();
    },
    cancelTask(taskId, bus) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          metadata: undefined,
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        }),
      );
      bus.finished();
      return Promise.resolve();
    },
  };
}

export function voltExecutor(agentId: string): AgentExecutor {
  return {
    execute(ctx, bus) {
      const { taskId, contextId } = ctx;
      const at = () => new Date().toISOString();
      bus.publish(
        AgentEvent.task(
          Task.fromJSON({
            id: taskId,
            contextId,
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
            history: [Message.toJSON(ctx.userMessage)],
          }),
        ),
      );
      const reply = agentMessage(taskId, contextId, [textPart(`${agentId} heard: ${inputOf(ctx.userMessage)}`)]);
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          metadata: undefined,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: at() },
        }),
      );
      bus.finished();
      return Promise.resolve();
    },
    cancelTask(_taskId, bus) {
      bus.finished();
      return Promise.resolve();
    },
  };
}

async function serve(mount: (app: express.Express, url: string) => void): Promise<PeerAgent> {
  const app = express();
  const requests: string[] = [];
  app.use((req, _res, next) => {
    requests.push(`${req.method} ${req.path}`);
    next();
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  mount(app, url);
  return {
    url,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export const card = (name: string, description: string, rpcUrl: string, skill: string) =>
  AgentCard.fromJSON({
    name,
    description,
    supportedInterfaces: [{ url: rpcUrl, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }],
    version: '0.1.0',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: skill, name: skill, description: skill, tags: [skill] }],
  });

/** Like `@google/gemini-cli-a2a-server` (see the module comment). */
export function startGeminiLike(): Promise<PeerAgent> {
  return serve((app, url) => {
    const handler = new DefaultRequestHandler(
      card('Gemini SDLC Agent', 'An agent that generates code', `${url}/`, 'code_generation'),
      new InMemoryTaskStore(),
      geminiExecutor(),
    );
    app.use('/.well-known/agent-card.json', legacyAgentCardRouter({ agentCardProvider: handler }));
    app.use(
      '/',
      jsonRpcHandler({
        requestHandler: handler,
        userBuilder: UserBuilder.noAuthentication,
        legacyCompat: { enabled: true },
      }),
    );
  });
}

/** Like `@voltagent/a2a-server` (see the module comment). */
export function startVoltLike(agentId: string): Promise<PeerAgent> {
  return serve((app, url) => {
    const handler = new DefaultRequestHandler(
      card(agentId, 'A VoltAgent agent', `${url}/a2a/${agentId}`, 'support'),
      new InMemoryTaskStore(),
      voltExecutor(agentId),
    );
    app.use(`/.well-known/${agentId}/agent-card.json`, legacyAgentCardRouter({ agentCardProvider: handler }));
    app.use(
      `/a2a/${agentId}`,
      jsonRpcHandler({
        requestHandler: handler,
        userBuilder: UserBuilder.noAuthentication,
        legacyCompat: { enabled: true },
      }),
    );
  });
}
