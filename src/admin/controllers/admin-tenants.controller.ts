import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { AdminOnly } from '../../common/auth.decorators.js';
import { requestIdOf } from '../../common/errors.js';
import { DEFAULT_PAGE_SIZE, PageQueryDto } from '../../common/pagination.dto.js';
import { TaskService } from '../../tasks/task.service.js';
import { AuditQueryDto, CreateTenantDto, TenantLimitsDto, UpdateTenantDto } from '../../tenants/dto/tenant.dto.js';
import { TenantsService } from '../../tenants/services/tenants.service.js';
import { ApiTags } from '@nestjs/swagger';
import { DocQuery } from '../../common/api-docs.js';

const rid = (req: Request): string => requestIdOf(req);

/** `/v1/admin/*`: tenant lifecycle and tokens, for the operator's admin token only. */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin')
export class AdminTenantsController {
  constructor(
    private readonly tenants: TenantsService,
    private readonly tasks: TaskService,
  ) {}

  @Post('tenants')
  async create(@Body() dto: CreateTenantDto, @Req() req: Request) {
    return this.tenants.create(dto.name, rid(req));
  }

  @Get('tenants')
  @DocQuery(PageQueryDto)
  async list(@Query() q: PageQueryDto) {
    return this.tenants.list(q.limit ?? DEFAULT_PAGE_SIZE, q.cursor);
  }

  @Get('tenants/:id')
  get(@Param('id') id: string) {
    return this.tenants.get(id);
  }

  /**
   * Disables or enables a tenant. Disabling refuses its tokens from the next
   * request on and ends the streams they hold; with `cancel_running: true`
   * its unfinished tasks are canceled too ("tenant disabled").
   */
  @Patch('tenants/:id')
  async update(@Param('id') id: string, @Body() dto: UpdateTenantDto, @Req() req: Request) {
    const tenant = await this.tenants.setDisabled(id, dto.disabled, rid(req));
    if (!dto.disabled || !dto.cancel_running) return tenant;
    const canceled = await this.tasks.cancelAll(tenant.id, 'tenant disabled');
    await this.tenants.recordAction('tenant.cancel_running', tenant.id, { canceled_tasks: canceled }, rid(req));
    return { ...tenant, canceled_tasks: canceled };
  }

  /** Quota overrides: keys left out are unchanged, null restores the default, 0 is unlimited. */
  @Patch('tenants/:id/limits')
  async limits(@Param('id') id: string, @Body() dto: TenantLimitsDto, @Req() req: Request) {
    return this.tenants.setLimits(id, dto, rid(req));
  }

  @Get('tenants/:id/tokens')
  async tokens(@Param('id') id: string) {
    return { items: await this.tenants.listTokens(id) };
  }

  /** A new token; every other token of the tenant is revoked at once. */
  @Post('tenants/:id/tokens/rotate')
  @HttpCode(201)
  rotate(@Param('id') id: string, @Req() req: Request) {
    return this.tenants.rotate(id, rid(req));
  }

  /** An additional token; existing ones stay valid (for gap-free client rotation). */
  @Post('tenants/:id/tokens')
  issue(@Param('id') id: string, @Req() req: Request) {
    return this.tenants.issueAdditional(id, rid(req));
  }

  @Delete('tenants/:id/tokens/:tokenId')
  revoke(@Param('id') id: string, @Param('tokenId') tokenId: string, @Req() req: Request) {
    return this.tenants.revoke(id, tokenId, rid(req));
  }

  @Get('audit')
  @DocQuery(AuditQueryDto)
  async audit(@Query() q: AuditQueryDto) {
    return this.tenants.auditLog(q.limit ?? DEFAULT_PAGE_SIZE, q.cursor, q.tenant_id);
  }
}
