import type { ChildProcess } from 'node:child_process';

/**
 * The official MCP client SDK — the client, its stdio and streamable-HTTP
 * transports, its error types and the Ajv validator of tool arguments —
 * loaded on the first MCP command, not with the application: most servers
 * never connect to an MCP server, and loading it costs about 0.4 s of CPU
 * at every start.
 */
async function load() {
  const [client, stdio, http, types, ajv] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]);

  /** The stdio transport, keeping hold of the child so its exit code and signal can be reported. */
  class WatchedStdioTransport extends stdio.StdioClientTransport {
    exit: string | undefined;

    override async start(): Promise<void> {
      await super.start();
      // The SDK keeps the child private; it is only read here, for the exit status.
      const child = Reflect.get(this, '_process') as ChildProcess | undefined;
      child?.once('exit', (code, signal) => {
        this.exit = signal ? `signal ${signal}` : `code ${code ?? '?'}`;
      });
    }
  }

  return {
    Client: client.Client,
    WatchedStdioTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    AjvJsonSchemaValidator: ajv.AjvJsonSchemaValidator,
  };
}

export type McpSdk = Awaited<ReturnType<typeof load>>;
export type WatchedStdioTransport = InstanceType<McpSdk['WatchedStdioTransport']>;

let loading: Promise<McpSdk> | undefined;

/** The SDK, loaded once (the first call starts the load; every later one gets the same). */
export function loadMcpSdk(): Promise<McpSdk> {
  return (loading ??= load());
}
