import { Module } from '@nestjs/common';
import { OutboundAuthModule } from '../outbound-auth/outbound-auth.module.js';
import { McpPool } from './mcp-pool.service.js';
import { McpRegistry } from './mcp-registry.service.js';
import { McpTool } from './mcp-tool.service.js';

/** MCP servers: the `mcp_servers.json` registry, the pooled SDK clients and the `/mcp` tool. */
@Module({
  imports: [OutboundAuthModule],
  providers: [McpRegistry, McpPool, McpTool],
  exports: [McpTool, McpRegistry],
})
export class McpModule {}
