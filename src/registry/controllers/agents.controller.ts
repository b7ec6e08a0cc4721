import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { CurrentTenant, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import { DEFAULT_PAGE_SIZE, PageQueryDto } from '../../common/pagination.dto.js';
import { requestIdOf } from '../../common/errors.js';
import { AgentCatalog, type AgentActor } from '../services/agent-catalog.service.js';
import { ApiTags } from '@nestjs/swagger';
import { DocBody, DocQuery, schemaOf } from '../../common/api-docs.js';
import { ConstitutionDto } from '../constitution.js';

/** An agent: its constitution's fields beside `id`, or `{id, agent_def: {…}}`; validated by the catalog. */
const AGENT_BODY = {
  type: 'object',
  description: 'the constitution flat beside `id`, or `{"id": …, "agent_def": {…}}`',
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    ...schemaOf(ConstitutionDto).properties,
    agent_def: { $ref: '#/components/schemas/ConstitutionDto' },
  },
};

const actor = (t: TenantPrincipal, req: Request): AgentActor => ({
  actor: t.actor,
  ...(t.jwt ? {} : { token: { id: t.tokenId, prefix: t.tokenPrefix } }),
  requestId: requestIdOf(req),
});

/** `/v1/agents`: the tenant's agent catalog. */
@ApiTags('agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly catalog: AgentCatalog) {}

  @RequireScope('agents:write')
  @Post()
  @DocBody({ ...AGENT_BODY, required: ['id'] })
  create(@CurrentTenant() t: TenantPrincipal, @Body() body: unknown, @Req() req: Request) {
    return this.catalog.create(t.tenantId, body, actor(t, req));
  }

  @RequireScope('agents:read', 'agents:write')
  @Get()
  @DocQuery(PageQueryDto)
  async list(@CurrentTenant() t: TenantPrincipal, @Query() q: PageQueryDto) {
    return this.catalog.list(t.tenantId, q.limit ?? DEFAULT_PAGE_SIZE, q.cursor);
  }

  @RequireScope('agents:read', 'agents:write')
  @Get(':id')
  get(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return this.catalog.get(t.tenantId, id);
  }

  @RequireScope('agents:write')
  @Patch(':id')
  @DocBody(AGENT_BODY, 'the fields to change; null resets one to its default')
  update(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Body() body: unknown, @Req() req: Request) {
    return this.catalog.update(t.tenantId, id, body, actor(t, req));
  }

  @RequireScope('agents:write')
  @Delete(':id')
  @HttpCode(204)
  async remove(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Req() req: Request): Promise<void> {
    await this.catalog.delete(t.tenantId, id, actor(t, req));
  }
}
