import { ARBITER_VERSION } from '../version.js';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '../config/app-config.js';
import { abortable } from '../common/abortable.js';
import { EgressError, parseHostList, type EgressPolicy } from '../common/net/egress.js';
import { OutboundAuthError } from '../outbound-auth/outbound-auth.types.js';
import { OutboundCredentials } from '../outbound-auth/outbound-credentials.service.js';
import { mcpFetch } from './mcp-fetch.js';
import { loadMcpSdk, type McpSdk, type WatchedStdioTransport } from './mcp-sdk.js';
import { serverSecrets, type McpServerConfig } from './mcp-registry.service.js';
import { strippedWithin, stripSecrets } from '../outbound-auth/credentials.js';
import { shownTool } from './shown-tool.js';
import { findJsonProblem, MAX_JSON_DEPTH } from '../common/json-guard.js';

/** A failure with its `/mcp` result line (`ERR: …`); the detail, if any, went to the log. */
export class McpFailure extends Error {
  constructor(readonly line: string) {
    super(line);
    this.name = 'McpFailure';
  }
}

export interface Connection {
  key: string;
  fingerprint: string;
  server: McpServerConfig;
  client: Client;
  /** The SDK the connection was made with (loaded on the first MCP command). */
  sdk: McpSdk;
  transport: WatchedStdioTransport | StreamableHTTPClientTransport;
  ready: Promise<void>;
  tools?: Tool[];
  inUse: number;
  idle?: NodeJS.Timeout;
  closed: boolean;
  /** Why the connection ended (the process exited, a call timed out …). */
  ended?: string;
}

const MAX_STDERR_LINE = 2_000;
const MAX_TOOL_PAGES = 20;

/**
 * MCP connections through the official SDK client, pooled per tenant and
 * server: a stdio server is one child process per tenant (so a stateful
 * server never mixes tenants), started on first use and stopped after
 * `ARBITER_MCP_IDLE_MS` without use (0: after every command); concurrent
 * commands share it. A registry edit of the server starts a new one. A
 * request that takes longer than `ARBITER_MCP_TIMEOUT_MS` is cancelled
 * (`notifications/cancelled`) and the server is stopped (a stdio child is
 * killed) — the next command starts it afresh. A child's stderr goes to the
 * log, line by line, never to the model.
 */
@Injectable()
export class McpPool implements OnModuleDestroy {
  private readonly logger = new Logger('Mcp');
  private readonly conns = new Map<string, Connection>();
  private readonly policy: EgressPolicy;

  constructor(
    private readonly config: AppConfig,
    private readonly credentials: OutboundCredentials,
  ) {
    this.policy = { allowPrivate: config.mcpAllowPrivate, allowHosts: parseHostList(config.mcpAllowlist) };
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.conns.values()].map((c) => this.close(c, 'shutting down')));
  }

  /** Runs `fn` on the tenant's connection to `server` (started if needed); failures become `McpFailure`. */
  async use<T>(
    tenantId: string,
    server: McpServerConfig,
    signal: AbortSignal,
    fn: (c: Connection) => Promise<T>,
  ): Promise<T> {
    if (server.missingEnv.length) {
      throw new McpFailure(
        `ERR: mcp server '${server.name}' is not usable: environment variable ${server.missingEnv.join(', ')} is not set`,
      );
    }
    const sdk = await abortable(loadMcpSdk(), signal);
    const conn = this.connection(sdk, tenantId, server);
    conn.inUse++;
    if (conn.idle) clearTimeout(conn.idle);
    try {
      await abortable(conn.ready, signal);
      return await fn(conn);
    } catch (err) {
      signal.throwIfAborted();
      throw this.failure(conn, err);
    } finally {
      conn.inUse--;
      if (conn.inUse === 0 && !conn.closed) {
        conn.idle = setTimeout(() => void this.close(conn, 'idle'), this.config.mcpIdleMs);
        conn.idle.unref();
      }
    }
  }

  /** The server's tools (every page), cached per connection until the server says the list changed. */
  async tools(conn: Connection, signal: AbortSignal): Promise<Tool[]> {
    if (conn.tools) return conn.tools;
    const tools: Tool[] = [];
    const secrets = serverSecrets(conn.server);
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const res = await conn.client.listTools(cursor ? { cursor } : undefined, this.requestOptions(signal));
      for (const tool of res.tools) {
        // A schema nested past the JSON limit can be neither shown nor checked against: the tool is not offered.
        if (findJsonProblem(tool.inputSchema, MAX_JSON_DEPTH, 'inputSchema')?.kind === 'depth') {
          this.logger.warn(
            { server: conn.server.name, tool: oneLine(String(tool.name)).slice(0, 100) },
            'mcp: tool left out: its input schema is nested too deep',
          );
          continue;
        }
        const shown = shownTool(tool, secrets);
        if (shown) tools.push(shown);
        else this.logger.warn({ server: conn.server.name }, 'mcp: tool left out: its name holds a secret of the entry');
      }
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    conn.tools = tools;
    return tools;
  }

  async call(
    conn: Connection,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    return (await conn.client.callTool(
      { name: tool, arguments: args },
      undefined,
      this.requestOptions(signal),
    )) as CallToolResult;
  }

  /** Tool names of the tenant's open connection to `server`, without starting anything (for the roster). */
  knownTools(tenantId: string, server: McpServerConfig): string[] | undefined {
    const c = this.conns.get(`${tenantId}\n${server.name}`);
    return c && !c.closed && c.fingerprint === server.fingerprint ? c.tools?.map((t) => t.name) : undefined;
  }

  private requestOptions(signal: AbortSignal): { signal: AbortSignal; timeout: number } {
    return { signal, timeout: this.config.mcpTimeoutMs };
  }

  private connection(sdk: McpSdk, tenantId: string, server: McpServerConfig): Connection {
    const key = `${tenantId}\n${server.name}`;
    const existing = this.conns.get(key);
    if (existing && !existing.closed && existing.fingerprint === server.fingerprint) return existing;
    if (existing) void this.close(existing, 'the registry changed');
    const client = new sdk.Client({ name: 'arbiter', version: ARBITER_VERSION }, { capabilities: {} });
    const transport =
      server.transport === 'stdio'
        ? new sdk.WatchedStdioTransport({
            command: server.command,
            args: server.args,
            env: server.env,
            ...(server.cwd ? { cwd: server.cwd } : {}),
            stderr: 'pipe',
          })
        : new sdk.StreamableHTTPClientTransport(new URL(server.url), {
            fetch: mcpFetch(
              this.policy,
              server.headers,
              this.credentials.credentialFor(server.auth),
              new URL(server.url).origin,
              this.config.mcpTimeoutMs,
            ),
          });
    const conn: Connection = {
      key,
      sdk,
      fingerprint: server.fingerprint,
      server,
      client,
      transport,
      ready: Promise.resolve(),
      inUse: 0,
      closed: false,
    };
    if (transport instanceof sdk.WatchedStdioTransport) this.logStderr(transport, server.name, tenantId);
    client.onclose = () => {
      if (!conn.closed) {
        conn.ended ??=
          transport instanceof sdk.WatchedStdioTransport
            ? `exited: ${transport.exit ?? 'the process ended'}`
            : 'closed the connection';
        this.logger.warn({ server: server.name, tenantId }, `MCP server ${conn.ended}`);
      }
      conn.closed = true;
      if (this.conns.get(key) === conn) this.conns.delete(key);
    };
    client.onerror = (err) => this.logger.debug({ server: server.name, err: err.message }, 'MCP transport error');
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
      conn.tools = undefined;
    });
    conn.ready = client.connect(transport, { timeout: this.config.mcpStartTimeoutMs }).catch(async (err: unknown) => {
      const why = this.failure(conn, err, true);
      await this.close(conn, 'start failed');
      throw why;
    });
    conn.ready.catch(() => undefined);
    this.conns.set(key, conn);
    return conn;
  }

  private logStderr(transport: WatchedStdioTransport, server: string, tenantId: string): void {
    let buffered = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      if (buffered.length > MAX_STDERR_LINE) {
        lines.push(buffered);
        buffered = '';
      }
      for (const line of lines) {
        if (line.trim()) this.logger.warn({ server, tenantId }, `stderr: ${line.slice(0, MAX_STDERR_LINE)}`);
      }
    });
  }

  /** Closes a connection (a stdio child: stdin closed, then SIGTERM, then SIGKILL). */
  private async close(conn: Connection, why: string): Promise<void> {
    if (conn.idle) clearTimeout(conn.idle);
    if (this.conns.get(conn.key) === conn) this.conns.delete(conn.key);
    if (conn.closed) return;
    conn.closed = true;
    conn.ended ??= why;
    try {
      if (conn.transport instanceof conn.sdk.StreamableHTTPClientTransport && conn.transport.sessionId) {
        await conn.transport.terminateSession().catch(() => undefined);
      }
      await conn.client.close();
    } catch (err) {
      this.logger.debug({ server: conn.server.name, err: (err as Error).message }, 'MCP close failed');
    }
  }

  /** The `/mcp` line for a failure (its detail to the log); a timed-out server is stopped. */
  private failure(conn: Connection, err: unknown, starting = false): McpFailure {
    if (err instanceof McpFailure) return err;
    const name = conn.server.name;
    const seconds = (ms: number): number => Math.max(1, Math.round(ms / 1000));
    const { McpError, ErrorCode, StreamableHTTPError } = conn.sdk;
    if (err instanceof McpError && err.code === (ErrorCode.RequestTimeout as number)) {
      const limit = starting ? this.config.mcpStartTimeoutMs : this.config.mcpTimeoutMs;
      conn.ended = `timed out after ${seconds(limit)} s`;
      void this.close(conn, conn.ended);
      return new McpFailure(
        starting
          ? `ERR: mcp server '${name}' could not start: no answer to initialize within ${seconds(limit)} s`
          : `ERR: mcp server '${name}' timed out after ${seconds(limit)} s (stopped)`,
      );
    }
    if (err instanceof EgressError) {
      return new McpFailure(
        err.code === 'blocked' || err.code === 'bad_url'
          ? `ERR: mcp server '${name}' refused: ${err.message}`
          : `ERR: mcp server '${name}' unreachable: ${err.message}`,
      );
    }
    if (err instanceof OutboundAuthError)
      return new McpFailure(`ERR: mcp server '${name}' credentials: ${err.message}`);
    if (err instanceof StreamableHTTPError && typeof err.code === 'number' && err.code >= 100) {
      return new McpFailure(`ERR: mcp server '${name}' answered HTTP ${err.code}`);
    }
    if (conn.closed && conn.ended && /^(exited|closed)/.test(conn.ended)) {
      return new McpFailure(`ERR: mcp server '${name}' ${conn.ended}`);
    }
    if (err instanceof McpError && err.code === (ErrorCode.ConnectionClosed as number)) {
      return new McpFailure(
        `ERR: mcp server '${name}' ${conn.server.transport === 'stdio' ? 'exited: the process ended' : 'closed the connection'}`,
      );
    }
    if (err instanceof McpError) {
      // The server's own words (without the SDK's prefix, which a server's own McpError carries once more) may quote
      // what it was sent: its entry's secrets and token-shaped values are taken out.
      const said = strippedWithin(
        stripSecrets,
        err.message.replace(/^(?:MCP error -?\d+: )+/, ''),
        serverSecrets(conn.server),
        4096,
      );
      return new McpFailure(`ERR: mcp server '${name}' error ${err.code}: ${oneLine(said)}`);
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (starting && typeof code === 'string') {
      return new McpFailure(
        `ERR: mcp server '${name}' could not start: ${code === 'ENOENT' ? 'command not found' : code}`,
      );
    }
    this.logger.warn({ server: name, err: (err as Error).message }, 'MCP request failed');
    return new McpFailure(
      starting
        ? `ERR: mcp server '${name}' could not start: see the server log`
        : `ERR: mcp server '${name}' failed: see the server log`,
    );
  }
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}
