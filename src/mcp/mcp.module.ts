import { Module } from '@nestjs/common';
import { OutboundAuthModule } from '../outbound-auth/outbound-auth.module.js';
import { TenantRegistryModule } from '../tenant-registry/tenant-registry.module.js';
import { McpPool } from './mcp-pool.service.js';
import { McpRegistry } from './mcp-registry.service.js';
import { McpServersController } from './mcp-servers.controller.js';
import { McpTool } from './mcp-tool.service.js';
import { TenantMcpServers } from './tenant-mcp-servers.service.js';

/** MCP servers: the `mcp_servers.json` registry, tenants' own servers, the pooled SDK clients and the `/mcp` tool. */
@Module({
  imports: [OutboundAuthModule, TenantRegistryModule],
  controllers: [McpServersController],
  providers: [McpRegistry, TenantMcpServers, McpPool, McpTool],
  exports: [McpTool, McpRegistry, TenantMcpServers],
})
export class McpModule {}
