import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { CurrentTenant, type TenantPrincipal } from '../../common/auth.decorators.js';
import { DEFAULT_PAGE_SIZE, PageQueryDto } from '../../common/pagination.dto.js';
import { validateAs } from '../../common/validation.js';
import { AgentCatalog } from '../services/agent-catalog.service.js';

/** `/v1/agents`: the tenant's agent catalog. */
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly catalog: AgentCatalog) {}

  @Post()
  create(@CurrentTenant() t: TenantPrincipal, @Body() body: unknown) {
    return this.catalog.create(t.tenantId, body);
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
  update(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Body() body: unknown) {
    return this.catalog.update(t.tenantId, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string): Promise<void> {
    await this.catalog.delete(t.tenantId, id);
  }
}
