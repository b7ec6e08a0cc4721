/**
 * The `bare` references of `npm run bench`: a plain `node:http` server answering
 * the three A2A JSON-RPC calls the bench makes — SendMessage (blocking),
 * SendStreamingMessage (the echo's chunks as SSE) and GetTask — with the JSON
 * the binding returns, doing the minimum: read the body, `JSON.parse` it,
 * build the response object, `JSON.stringify` it. No framework, no validation
 * beyond what building the answer needs.
 *
 * `bare`: tasks are kept in a Map — what the runtime itself costs per
 * request, the floor any A2A server on Node stands on.
 *
 * `bare-pg` (`BARE_DATABASE_URL` set): each task is one row of PostgreSQL,
 * inserted (one prepared statement, committed on its own) before the send is
 * answered or the stream's last event written; GetTask reads the row. The
 * floor of a server that commits a task before it answers: one round trip to
 * PostgreSQL per request, no batching, on a pool of 4 connections (with the
 * driver's timeouts Arbiter uses, so a silent database fails requests instead
 * of holding them).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import pg from 'pg';
import { chunkText } from '../src/orchestrator/providers/echo.model.js';

const chunks = Number(process.env.ARBITER_ECHO_CHUNKS ?? 4);
const port = Number(process.env.PORT ?? 0);
const databaseUrl = process.env.BARE_DATABASE_URL;
const pool = databaseUrl
  ? new pg.Pool({ connectionString: databaseUrl, max: 4, connectionTimeoutMillis: 3000, query_timeout: 15_000 })
  : undefined;
// An idle connection that breaks (the database restarted) is dropped by the pool; without a listener it would end
// the process.
pool?.on('error', (err) => process.stderr.write(`bare-pg: idle connection lost: ${err.message}\n`));

interface TextPart {
  text: string;
}
interface MessageJson {
  messageId: string;
  contextId: string;
  taskId: string;
  role: string;
  parts: TextPart[];
}
interface RpcRequest {
  id?: unknown;
  method?: unknown;
  params?: { id?: unknown; message?: { messageId?: unknown; contextId?: unknown; parts?: unknown } };
}

const tasks = new Map<string, unknown>();

/** Keeps the task: in the Map, or committed as one row. */
function store(id: string, task: unknown): Promise<unknown> | undefined {
  if (!pool) {
    tasks.set(id, task);
    return undefined;
  }
  return pool.query({
    name: 'bare-insert',
    text: 'INSERT INTO bare_tasks (id, task) VALUES ($1, $2)',
    values: [id, JSON.stringify(task)],
  });
}

/** The task by id, or undefined: from the Map, or its row. */
async function load(id: string): Promise<unknown> {
  if (!pool) return tasks.get(id);
  const { rows } = await pool.query<{ task: unknown }>({
    name: 'bare-select',
    text: 'SELECT task FROM bare_tasks WHERE id = $1',
    values: [id],
  });
  return rows[0]?.task;
}

const rpcError = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', id, error: { code, message } });

function reply(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The caller's message as stored in the task, and its text. */
function inputOf(rpc: RpcRequest, taskId: string, contextId: string): { message: MessageJson; text: string } | null {
  const m = rpc.params?.message;
  if (!m || typeof m.messageId !== 'string' || !Array.isArray(m.parts)) return null;
  const parts = (m.parts as unknown[]).map((p) => ({ text: String((p as Partial<TextPart>)?.text ?? '') }));
  return {
    message: { messageId: m.messageId, contextId, taskId, role: 'ROLE_USER', parts },
    text: parts.map((p) => p.text).join('\n'),
  };
}

function send(rpc: RpcRequest, res: ServerResponse): void {
  const taskId = randomUUID();
  const contextId = typeof rpc.params?.message?.contextId === 'string' ? rpc.params.message.contextId : randomUUID();
  const input = inputOf(rpc, taskId, contextId);
  if (!input) return reply(res, rpcError(rpc.id ?? null, -32602, 'params.message is required'));
  const task = {
    id: taskId,
    contextId,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: new Date().toISOString() },
    artifacts: [{ artifactId: `${taskId}-text-0`, name: 'response', parts: [{ text: input.text }] }],
    history: [
      input.message,
      { messageId: `${taskId}-r0`, contextId, taskId, role: 'ROLE_AGENT', parts: [{ text: input.text }] },
    ],
  };
  const answer = () => reply(res, { jsonrpc: '2.0', id: rpc.id ?? null, result: { task } });
  const stored = store(taskId, task);
  if (!stored) return answer();
  stored.then(answer, () => reply(res, rpcError(rpc.id ?? null, -32603, 'could not store the task')));
}

function stream(rpc: RpcRequest, res: ServerResponse): void {
  const taskId = randomUUID();
  const contextId = typeof rpc.params?.message?.contextId === 'string' ? rpc.params.message.contextId : randomUUID();
  const input = inputOf(rpc, taskId, contextId);
  if (!input) return reply(res, rpcError(rpc.id ?? null, -32602, 'params.message is required'));
  const id = rpc.id ?? null;
  const at = new Date().toISOString();
  const artifactId = `${taskId}-text-0`;
  const agent = { messageId: `${taskId}-r0`, contextId, taskId, role: 'ROLE_AGENT', parts: [{ text: input.text }] };
  const frame = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(
    frame({
      task: {
        id: taskId,
        contextId,
        status: { state: 'TASK_STATE_SUBMITTED', timestamp: at },
        history: [input.message],
      },
    }),
  );
  res.write(frame({ statusUpdate: { taskId, contextId, status: { state: 'TASK_STATE_WORKING', timestamp: at } } }));
  chunkText(input.text, chunks).forEach((text, i) =>
    res.write(
      frame({
        artifactUpdate: {
          taskId,
          contextId,
          artifact: { artifactId, name: 'response', parts: [{ text }] },
          ...(i > 0 ? { append: true } : {}),
        },
      }),
    ),
  );
  const done = new Date().toISOString();
  const end = () =>
    res.end(frame({ statusUpdate: { taskId, contextId, status: { state: 'TASK_STATE_COMPLETED', timestamp: done } } }));
  const stored = store(taskId, {
    id: taskId,
    contextId,
    status: { state: 'TASK_STATE_COMPLETED', timestamp: done },
    artifacts: [{ artifactId, name: 'response', parts: [{ text: input.text }] }],
    history: [input.message, agent],
  });
  if (!stored) return void end();
  stored.then(end, () => res.end(`data: ${JSON.stringify(rpcError(id, -32603, 'could not store the task'))}\n\n`));
}

function handle(res: ServerResponse, body: string): void {
  let rpc: RpcRequest;
  try {
    rpc = JSON.parse(body) as RpcRequest;
  } catch {
    return reply(res, rpcError(null, -32700, 'parse error'));
  }
  switch (rpc.method) {
    case 'SendMessage':
      return send(rpc, res);
    case 'SendStreamingMessage':
      return stream(rpc, res);
    case 'GetTask': {
      const found = (task: unknown) =>
        reply(
          res,
          task ? { jsonrpc: '2.0', id: rpc.id ?? null, result: task } : rpcError(rpc.id, -32001, 'Task not found'),
        );
      const id = rpc.params?.id;
      if (typeof id !== 'string') return found(undefined);
      if (!pool) return found(tasks.get(id));
      return void load(id).then(found, () => reply(res, rpcError(rpc.id ?? null, -32603, 'could not read the task')));
    }
    default:
      return reply(res, rpcError(rpc.id ?? null, -32601, 'method not found'));
  }
}

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/rpc') {
    res.writeHead(404).end();
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d: string) => {
    body += d;
    if (body.length > 1 << 20) req.destroy();
  });
  req.on('end', () => handle(res, body));
});
server.keepAliveTimeout = 60_000;
// A text key: an id that is not a UUID is a task not found, as in the Map.
const ready = pool
  ? pool.query('CREATE TABLE IF NOT EXISTS bare_tasks (id text PRIMARY KEY, task jsonb NOT NULL)')
  : Promise.resolve();
ready.then(
  () =>
    server.listen(port, '127.0.0.1', () => {
      const addr = server.address() as { port: number };
      process.stdout.write(
        `listening on http://127.0.0.1:${addr.port} (bare node:http${pool ? ', PostgreSQL' : ''})\n`,
      );
    }),
  (err: unknown) => {
    process.stderr.write(`bare-pg: could not create its table: ${String(err)}\n`);
    process.exit(1);
  },
);
const stop = () => {
  server.closeAllConnections();
  server.close(() => void (pool?.end() ?? Promise.resolve()).finally(() => process.exit(0)));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
