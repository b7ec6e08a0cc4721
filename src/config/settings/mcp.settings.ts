import { BoolEnv, DurationEnv, HostListEnv, TextEnv } from './setting.decorators.js';

/** MCP servers that `/mcp` calls. */
export class McpSettings {
  /**
   * The MCP server registry.
   * @default `ARBITER_HOME/mcp_servers.json`
   */
  @TextEnv('ARBITER_MCP_SERVERS_FILE', { allowed: 'a file path' }) mcpServersFile?: string;

  /** Let streamable-HTTP MCP servers be on private and loopback addresses (in-cluster servers). */
  @BoolEnv('ARBITER_MCP_ALLOW_PRIVATE') mcpAllowPrivate = false;

  /** `host` / `host:port` entries MCP servers may use on private or loopback addresses. */
  @HostListEnv('ARBITER_MCP_ALLOWLIST') mcpAllowlist = '';

  /** One `/mcp` request (a tool call, a tool listing); past it the request is cancelled and the server stopped. */
  @DurationEnv('ARBITER_MCP_TIMEOUT_MS', 100, 3_600_000) mcpTimeoutMs = 60_000;

  /** An MCP server's start plus `initialize`. */
  @DurationEnv('ARBITER_MCP_START_TIMEOUT_MS', 100, 600_000) mcpStartTimeoutMs = 20_000;

  /** How long a tenant's unused MCP connection (a stdio child) stays open; `0`: per request. */
  @DurationEnv('ARBITER_MCP_IDLE_MS', 0, 86_400_000) mcpIdleMs = 60_000;
}
