import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const require = createRequire(import.meta.url);

/** The JS entry of a published reference server (launched with `process.execPath`, no npx). */
export function referenceServerEntry(
  pkg: '@modelcontextprotocol/server-everything' | '@modelcontextprotocol/server-memory',
): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js');
}

/** The tiny test server (test/helpers/mcp-test-server.ts, compiled beside this file). */
export const TEST_SERVER_ENTRY = join(dirname(fileURLToPath(import.meta.url)), 'mcp-test-server.js');

export interface HttpMcp {
  url: string;
  /** Authorization headers of the requests, in order. */
  auth: (string | undefined)[];
  close(): Promise<void>;
}

type EverythingFactory = () => { server: McpServer; cleanup: (sessionId?: string) => void };

/**
 * `@modelcontextprotocol/server-everything` over streamable HTTP, bound to
 * 127.0.0.1 only: its own server factory behind the SDK's server transport,
 * one session per client (as its `streamableHttp` launcher does, which
 * listens on every interface). Requests without `Bearer <token>` get 401
 * (or, given a check instead of a token, those it refuses).
 */
export async function startEverythingHttp(
  token: string | ((authorization: string | undefined) => Promise<boolean>),
): Promise<HttpMcp> {
  const allowed =
    typeof token === 'string' ? (a: string | undefined) => Promise.resolve(a === `Bearer ${token}`) : token;
  const entry = pathToFileURL(
    join(dirname(referenceServerEntry('@modelcontextprotocol/server-everything')), 'server', 'index.js'),
  ).href;
  const { createServer: createEverything } = (await import(entry)) as { createServer: EverythingFactory };
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; cleanup: () => void }>();
  const auth: (string | undefined)[] = [];
  const { url, close } = await listenMcp(async (req, res) => {
    auth.push(req.headers.authorization);
    if (!(await allowed(req.headers.authorization))) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const known = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (known) return known.transport.handleRequest(req, res);
    if (req.method !== 'POST' || sid) {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"no session"}');
      return;
    }
    const { server, cleanup } = createEverything();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, cleanup: () => cleanup(id) }),
      onsessionclosed: (id) => {
        sessions.get(id)?.cleanup();
        sessions.delete(id);
      },
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  return {
    url,
    auth,
    close: async () => {
      for (const s of sessions.values()) {
        s.cleanup();
        await s.transport.close();
      }
      await close();
    },
  };
}

/**
 * An HTTP server on 127.0.0.1 answering every request with `handle` (a 500 when it throws before answering), at
 * `<url>/mcp`; `close` ends its connections and the port.
 */
async function listenMcp(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: async () => {
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
}

/** An object schema whose one property is an object schema … `depth` times. */
function deepSchema(depth: number): { type: 'object'; properties: Record<string, unknown> } {
  let schema: { type: 'object'; properties: Record<string, unknown> } = { type: 'object', properties: {} };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { inner: schema } };
  return schema;
}

/**
 * A careless MCP server over streamable HTTP (stateless, the official SDK's low-level server): its tools repeat the
 * `Authorization` and `X-Api-Key` they were sent, as a server that logs into its errors would — `quote` in a
 * failed tool result (`isError`), `explode` in a JSON-RPC error; and `deep` has an input schema nested past the
 * JSON limit.
 */
export async function startQuotingHttp(): Promise<{ url: string; close: () => Promise<void> }> {
  const { Server: SdkServer } = await import('@modelcontextprotocol/sdk/server/index.js');
  const { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode } =
    await import('@modelcontextprotocol/sdk/types.js');
  return listenMcp(async (req, res) => {
    const server = new SdkServer({ name: 'quoting', version: '1.0.0' }, { capabilities: { tools: {} } });
    const noArgs = { type: 'object' as const, properties: {} };
    const quoted = (headers: Record<string, string | string[] | undefined>): string => {
      const auth = String(headers.authorization ?? '');
      return `key ${String(headers['x-api-key'] ?? '')}, token ${auth.replace(/^Bearer /, '')} (sent as "${auth}")`;
    };
    server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => ({
      tools: [
        { name: 'quote', description: 'fails, quoting what it was sent', inputSchema: noArgs },
        { name: 'explode', description: 'errs, quoting what it was sent', inputSchema: noArgs },
        {
          name: 'mirror',
          // Its listing quotes what the listing was sent, in its description and its schema.
          description: `succeeds, quoting what it was sent; listed for ${quoted(extra.requestInfo?.headers ?? {})}`,
          inputSchema: { ...noArgs, description: quoted(extra.requestInfo?.headers ?? {}) },
        },
        { name: 'deep', description: 'an input schema nested 200 levels', inputSchema: deepSchema(200) },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const said = quoted(extra.requestInfo?.headers ?? {});
      if (request.params.name === 'explode') throw new McpError(ErrorCode.InternalError, `exploded: ${said}`);
      if (request.params.name === 'mirror') return { content: [{ type: 'text', text: `you sent: ${said}` }] };
      return { isError: true, content: [{ type: 'text', text: `refused: ${said}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
}
