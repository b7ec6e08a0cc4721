import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  ChangedBy,
  CurrentTenant,
  RequireScope,
  type ChangeBy,
  type TenantPrincipal,
} from '../common/auth.decorators.js';
import { RemoteAgentDto, RemoteAgentPatchDto } from './remote-agent.dto.js';
import { TenantRemotes } from './tenant-remotes.service.js';

/**
 * `/v1/remote-agents`: the tenant's own remote A2A agents, beside the operator's shared ones (`a2a_agents.json`);
 * what `/a2a` reaches. Reads show each secret as `"set"`.
 */
@ApiTags('remote agents')
@Controller('v1/remote-agents')
export class RemoteAgentsController {
  constructor(private readonly remotes: TenantRemotes) {}

  @RequireScope('agents:write')
  @Post()
  create(@CurrentTenant() t: TenantPrincipal, @Body() dto: RemoteAgentDto, @ChangedBy() by: ChangeBy) {
    const { name, ...entry } = dto;
    return this.remotes.own.create(t.tenantId, name, { ...entry }, by);
  }

  @RequireScope('agents:read', 'agents:write')
  @Get()
  list(@CurrentTenant() t: TenantPrincipal) {
    return this.remotes.own.list(t.tenantId);
  }

  @RequireScope('agents:read', 'agents:write')
  @Get(':name')
  get(@CurrentTenant() t: TenantPrincipal, @Param('name') name: string) {
    return this.remotes.own.get(t.tenantId, name);
  }

  @RequireScope('agents:write')
  @Patch(':name')
  update(
    @CurrentTenant() t: TenantPrincipal,
    @Param('name') name: string,
    @Body() dto: RemoteAgentPatchDto,
    @ChangedBy() by: ChangeBy,
  ) {
    return this.remotes.own.update(t.tenantId, name, { ...dto }, by);
  }

  @RequireScope('agents:write')
  @Delete(':name')
  @HttpCode(204)
  async remove(@CurrentTenant() t: TenantPrincipal, @Param('name') name: string, @ChangedBy() by: ChangeBy) {
    await this.remotes.own.remove(t.tenantId, name, by);
  }
}
