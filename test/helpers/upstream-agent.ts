import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Message, Role, Task, TaskState, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

/**
 * An upstream for gateway mode: the official SDK 1.3 server (v1.0 JSON-RPC) with its in-memory task store and
 * no push, on loopback, restartable on the same port (a restart loses every task, as such servers do). Its input
 * picks what it does:
 *   `chunks <w1> <w2> …`  streams an `answer` artifact word by word (append, lastChunk), then completes
 *   `ask`                 says "thinking" (working), then asks "which colour?" (input-required); the next
 *                         message to that task completes it with "colour: <message>"
 *   `hold`, `silent`      stay working until canceled (`silent` says nothing after the task)
 *   `script`              paced by the test (`step()` releases each phase): the task; then "step one"
 *                         (working) and an `answer` artifact "alpha"; then its chunk " beta" and "step two";
 *                         then its last chunk " gamma" and completed without a message
 *   anything else         completes with "upstream heard: <input>" as the status message
 * Endpoints: `/rpc` (card says streaming), `/poll` (card says no streaming: followed by GetTask),
 * `/foreign` (a stream whose second event is of another task), `/garbage` (a stream of non-A2A events),
 * `/deep` (a stream whose second event is nested 300 levels deep; `/deep-lines` the same event over 300 `data:`
 * lines, each within the nesting limit), `/huge` (one whose second event is 5 MiB),
 * `/linger` (a stream that completes its task with "lingering answer", then keeps the response open),
 * `/dirty` (an artifact whose name, file name, media type, data and metadata key hold a NUL and a lone surrogate,
 * then completed), `/badlink` (an artifact whose file part links to `javascript:`), `/dirty-id` (a task whose id
 * ends in half a surrogate pair, its context id beginning with the other half), `/flood` (an artifact of four appended chunks of 400 KiB each, then completed).
 */
export interface Upstream {
  url: string;
  /** Upstream task ids it was asked to cancel. */
  canceled: Set<string>;
  /** Lets a `script` task do its next phase (now, or when it gets there). */
  step(): void;
  /** How many SubscribeToTask requests it had (resubscriptions). */
  subscriptions(): number;
  /** Each message sent to `/rpc` or `/poll` (SendMessage, SendStreamingMessage), as text, in order, over all starts. */
  messages(): string[];
  /** `/linger` responses: `held` once one sent its last event and stays open, `closed` when its caller closed it. */
  lingering: EventEmitter;
  /** How many HTTP requests and TCP connections it has had, over every start. */
  traffic(): { requests: number; connections: number };
  restart(): Promise<void>;
  close(): Promise<void>;
}

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function agentMessage(taskId: string, contextId: string, id: string, value: string): Message {
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

/** The test's pacing of `script` tasks: each `release` lets one waiting (or the next) phase go. */
class Steps {
  private credits = 0;
  private waiters: (() => void)[] = [];
  next(): Promise<void> {
    if (this.credits > 0) {
      this.credits--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const w = this.waiters.shift();
    if (w) w();
    else this.credits++;
  }
  /** A restart: the phases waited for die with the process they belonged to. */
  reset(): void {
    this.waiters = [];
    this.credits = 0;
  }
}

function executor(canceled: Set<string>, steps: Steps): AgentExecutor {
  const waiting = new Map<string, () => void>();
  return {
    async execute(ctx, bus) {
      const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');
      const { taskId, contextId } = ctx;
      const at = () => new Date().toISOString();
      const status = (state: TaskState, message?: Message) =>
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          metadata: undefined,
          status: { state, message, timestamp: at() },
        });
      if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        bus.publish(
          AgentEvent.task({
            ...ctx.task,
            status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: at() },
          }),
        );
        bus.publish(
          status(TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, `${taskId}-done`, `colour: ${input}`)),
        );
        bus.finished();
        return;
      }
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
      if (input === 'hold' || input === 'silent') {
        if (input === 'hold')
          bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, `${taskId}-w`, 'holding')));
        await new Promise<void>((resolve) => waiting.set(taskId, resolve));
        return;
      }
      if (input === 'script') {
        const chunk = (value: string, append: boolean, lastChunk: boolean) =>
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            metadata: undefined,
            artifact: {
              artifactId: 'answer',
              name: 'answer',
              description: '',
              parts: [text(value)],
              metadata: undefined,
              extensions: [],
            },
            append,
            lastChunk,
          });
        await steps.next();
        bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, `${taskId}-s1`, 'step one')));
        bus.publish(chunk('alpha', false, false));
        await steps.next();
        bus.publish(chunk(' beta', true, false));
        bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, `${taskId}-s2`, 'step two')));
        await steps.next();
        bus.publish(chunk(' gamma', true, true));
        bus.publish(status(TaskState.TASK_STATE_COMPLETED));
        bus.finished();
        return;
      }
      if (input === 'ask') {
        bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, `${taskId}-t`, 'thinking')));
        bus.publish(
          status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(taskId, contextId, `${taskId}-q`, 'which colour?')),
        );
        bus.finished();
        return;
      }
      if (input.startsWith('chunks ')) {
        const words = input.slice('chunks '.length).split(' ');
        words.forEach((w, i) =>
          bus.publish(
            AgentEvent.artifactUpdate({
              taskId,
              contextId,
              metadata: undefined,
              artifact: {
                artifactId: 'answer',
                name: 'answer',
                description: '',
                parts: [text(i === 0 ? w : ` ${w}`)],
                metadata: undefined,
                extensions: [],
              },
              append: i > 0,
              lastChunk: i === words.length - 1,
            }),
          ),
        );
        bus.publish(
          status(
            TaskState.TASK_STATE_COMPLETED,
            agentMessage(taskId, contextId, `${taskId}-r`, `done: ${words.length} words`),
          ),
        );
        bus.finished();
        return;
      }
      bus.publish(
        status(
          TaskState.TASK_STATE_COMPLETED,
          agentMessage(taskId, contextId, `${taskId}-r`, `upstream heard: ${input}`),
        ),
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

const cardOf = (url: string, streaming: boolean) =>
  AgentCard.fromJSON({
    name: 'Vendor Upstream',
    description: 'A vendor agent built on the A2A SDK',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: '1',
    capabilities: { streaming, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'vendor-skill', name: 'Vendor skill', description: 'does vendor things', tags: ['vendor'] }],
  });

/** A stream of hand-written JSON-RPC results (for upstreams that misbehave); with `held`, left open after them. */
function rawStream(results: (id: unknown) => unknown[], held?: EventEmitter): express.RequestHandler {
  return (req, res) => {
    const id = (req.body as { id?: unknown }).id ?? null;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const result of results(id)) res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
    if (!held) return void res.end();
    res.on('close', () => held.emit('closed'));
    held.emit('held');
  };
}

export async function startUpstream(): Promise<Upstream> {
  const canceled = new Set<string>();
  const steps = new Steps();
  let subscriptions = 0;
  const messages: string[] = [];
  const lingering = new EventEmitter();
  let lingered = 0;
  const traffic = { requests: 0, connections: 0 };
  let server: Server | undefined;
  let port = 0;
  const listen = async (): Promise<void> => {
    const app = express();
    const url = `http://127.0.0.1:${port}`; // port 0 at the first start: the cards below read it when asked
    const base = (): string => `http://127.0.0.1:${port}`;
    const store = new InMemoryTaskStore();
    const exec = executor(canceled, steps);
    type Call = { method?: unknown; params?: { message?: { parts?: { text?: unknown }[] } } } | undefined;
    app.use(['/rpc', '/poll'], express.json(), (req, _res, next) => {
      const call = req.body as Call;
      if (call?.method === 'SubscribeToTask') subscriptions++;
      if (call?.method === 'SendMessage' || call?.method === 'SendStreamingMessage') {
        messages.push(
          (call.params?.message?.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n'),
        );
      }
      next();
    });
    const streaming = new DefaultRequestHandler(cardOf(`${url}/rpc`, true), store, exec);
    const polled = new DefaultRequestHandler(cardOf(`${url}/poll`, false), store, exec);
    for (const [path, handler, stream] of [
      ['/rpc', streaming, true],
      ['/poll', polled, false],
    ] as const) {
      app.get(`${path}/agent-card.json`, (_req, res) => res.json(AgentCard.toJSON(cardOf(`${base()}${path}`, stream))));
      app.use(path, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    }
    for (const path of [
      '/foreign',
      '/garbage',
      '/deep',
      '/deep-lines',
      '/huge',
      '/linger',
      '/dirty',
      '/badlink',
      '/dirty-id',
      '/flood',
    ]) {
      app.get(`${path}/agent-card.json`, (_req, res) => res.json(AgentCard.toJSON(cardOf(`${base()}${path}`, true))));
    }
    const task = (id: string) => ({ task: { id, contextId: 'ctx-1', status: { state: 'TASK_STATE_WORKING' } } });
    app.post(
      '/foreign',
      express.json(),
      rawStream(() => [
        task('up-1'),
        { statusUpdate: { taskId: 'up-2', contextId: 'ctx-1', status: { state: 'TASK_STATE_COMPLETED' } } },
      ]),
    );
    app.post(
      '/garbage',
      express.json(),
      rawStream(() => [
        task('up-1'),
        { artifactUpdate: { taskId: 'up-1', contextId: 'ctx-1', artifact: { parts: 7 } } },
      ]),
    );
    const bad = 'a\u0000b\ud800c';
    const completed = {
      statusUpdate: { taskId: 'up-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_COMPLETED' } },
    };
    const dirty = {
      artifactId: 'dirty',
      name: bad,
      parts: [
        { url: 'https://files.example/x?q=\u0000z', filename: bad, mediaType: bad },
        { data: { [bad]: [bad, JSON.parse(`{"__proto__":${JSON.stringify(bad)}}`)] }, metadata: { [bad]: 1 } },
      ],
    };
    app.post(
      '/dirty',
      express.json(),
      rawStream(() => [
        task('up-1'),
        { artifactUpdate: { taskId: 'up-1', contextId: 'ctx-1', artifact: dirty } },
        completed,
      ]),
    );
    const badlink = { artifactId: 'link', parts: [{ url: "javascript:alert('x')", filename: 'x.html' }] };
    app.post(
      '/badlink',
      express.json(),
      rawStream(() => [
        task('up-1'),
        { artifactUpdate: { taskId: 'up-1', contextId: 'ctx-1', artifact: badlink } },
        completed,
      ]),
    );
    app.post(
      '/dirty-id',
      express.json(),
      // Each id ill-formed, their concatenation a well-formed pair: each is checked on its own.
      rawStream(() => [
        { task: { id: 'up-1\ud800', contextId: '\udc00ctx', status: { state: 'TASK_STATE_WORKING' } } },
      ]),
    );
    const chunk = (i: number) => ({
      artifactUpdate: {
        taskId: 'up-1',
        contextId: 'ctx-1',
        append: i > 0,
        artifact: { artifactId: 'flood', parts: [{ text: 'x'.repeat(400 * 1024) }] },
      },
    });
    app.post(
      '/flood',
      express.json(),
      rawStream(() => [task('up-1'), ...[0, 1, 2, 3].map(chunk), completed]),
    );
    let deep: unknown = 'bottom';
    for (let i = 0; i < 300; i++) deep = { deeper: deep };
    app.post(
      '/deep',
      express.json(),
      rawStream(() => [task('up-1'), { artifactUpdate: { taskId: 'up-1', contextId: 'ctx-1', metadata: deep } }]),
    );
    app.post('/deep-lines', express.json(), (req, res) => {
      const id = (req.body as { id?: unknown }).id ?? null;
      const deepEvent = { artifactUpdate: { taskId: 'up-1', contextId: 'ctx-1', metadata: deep } };
      const frame = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(frame(task('up-1')));
      // One event, a line per level: a client joins its data lines (a line end between) before parsing them.
      res.end(frame(deepEvent).replaceAll(':{', ':\ndata: {'));
    });
    app.post(
      '/huge',
      express.json(),
      rawStream(() => {
        const message = { messageId: 'up-1-r', role: 'ROLE_AGENT', parts: [{ text: 'x'.repeat(5 * 1024 * 1024) }] };
        return [
          task('up-1'),
          { statusUpdate: { taskId: 'up-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_WORKING', message } } },
        ];
      }),
    );
    app.post(
      '/linger',
      express.json(),
      rawStream(() => {
        const [taskId, contextId] = [`linger-${++lingered}`, `linger-ctx-${lingered}`];
        const message = { messageId: `${taskId}-r`, role: 'ROLE_AGENT', parts: [{ text: 'lingering answer' }] };
        return [
          { task: { id: taskId, contextId, status: { state: 'TASK_STATE_WORKING' } } },
          { statusUpdate: { taskId, contextId, status: { state: 'TASK_STATE_COMPLETED', message } } },
        ];
      }, lingering),
    );
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(port, '127.0.0.1', () => resolve(s));
    });
    port = (server.address() as AddressInfo).port;
    server.on('connection', () => traffic.connections++);
    server.on('request', () => traffic.requests++);
  };
  const stop = (): Promise<void> =>
    new Promise<void>((r) => {
      if (!server) return r();
      server.closeAllConnections();
      server.close(() => r());
    });
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    canceled,
    step: () => steps.release(),
    subscriptions: () => subscriptions,
    messages: () => [...messages],
    lingering,
    traffic: () => ({ ...traffic }),
    async restart() {
      steps.reset();
      await stop();
      await listen();
    },
    close: stop,
  };
}
