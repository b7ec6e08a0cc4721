import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  ChangedBy,
  CurrentTenant,
  RequireScope,
  type ChangeBy,
  type TenantPrincipal,
} from '../common/auth.decorators.js';
import { McpServerDto, McpServerPatchDto } from './mcp-server.dto.js';
import { TenantMcpServers } from './tenant-mcp-servers.service.js';

/**
 * `/v1/mcp-servers`: the tenant's own MCP servers (streamable HTTP), beside the operator's shared ones
 * (`mcp_servers.json`); what `/mcp` reaches. Reads show each header value and secret as `"set"`.
 */
@ApiTags('mcp servers')
@Controller('v1/mcp-servers')
export class McpServersController {
  constructor(private readonly servers: TenantMcpServers) {}

  @RequireScope('agents:write')
  @Post()
  create(@CurrentTenant() t: TenantPrincipal, @Body() dto: McpServerDto, @ChangedBy() by: ChangeBy) {
    const { name, ...entry } = dto;
    return this.servers.own.create(t.tenantId, name, { ...entry }, by);
  }

  @RequireScope('agents:read', 'agents:write')
  @Get()
  list(@CurrentTenant() t: TenantPrincipal) {
    return this.servers.own.list(t.tenantId);
  }

  @RequireScope('agents:read', 'agents:write')
  @Get(':name')
  get(@CurrentTenant() t: TenantPrincipal, @Param('name') name: string) {
    return this.servers.own.get(t.tenantId, name);
  }

  @RequireScope('agents:write')
  @Patch(':name')
  update(
    @CurrentTenant() t: TenantPrincipal,
    @Param('name') name: string,
    @Body() dto: McpServerPatchDto,
    @ChangedBy() by: ChangeBy,
  ) {
    return this.servers.own.update(t.tenantId, name, { ...dto }, by);
  }

  @RequireScope('agents:write')
  @Delete(':name')
  @HttpCode(204)
  async remove(@CurrentTenant() t: TenantPrincipal, @Param('name') name: string, @ChangedBy() by: ChangeBy) {
    await this.servers.own.remove(t.tenantId, name, by);
  }
}
