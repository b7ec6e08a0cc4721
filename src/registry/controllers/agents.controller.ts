import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { CurrentTenant, type TenantPrincipal } from '../../common/auth.decorators.js';
import { DEFAULT_PAGE_SIZE, PageQueryDto } from '../../common/pagination.dto.js';
import { validateAs } from '../../common/validation.js';
import { requestIdOf } from '../../common/errors.js';
import { AgentCatalog, type AgentActor } from '../services/agent-catalog.service.js';

const actor = (t: TenantPrincipal, req: Request): AgentActor => ({
  tokenId: t.tokenId,
  tokenPrefix: t.tokenPrefix,
  requestId: requestIdOf(req),
});

/** `/v1/agents`: the tenant's agent catalog. */
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly catalog: AgentCatalog) {}

  @Post()
  create(@CurrentTenant() t: TenantPrincipal, @Body() body: unknown, @Req() req: Request) {
    return this.catalog.create(t.tenantId, body, actor(t, req));
  }

  @Get()
  async list(@CurrentTenant() t: TenantPrincipal, @Query() query: unknown) {
    const q = await validateAs(PageQueryDto, query);
    return this.catalog.list(t.tenantId, q.limit ?? DEFAULT_PAGE_SIZE, q.cursor);
  }

  @Get(':id')
  get(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return this.catalog.get(t.tenantId, id);
  }

  @Patch(':id')
  update(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Body() body: unknown, @Req() req: Request) {
    return this.catalog.update(t.tenantId, id, body, actor(t, req));
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Req() req: Request): Promise<void> {
    await this.catalog.delete(t.tenantId, id, actor(t, req));
  }
}
