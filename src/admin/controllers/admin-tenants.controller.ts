import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { AdminOnly, ChangedBy, type ChangeBy } from '../../common/auth.decorators.js';
import { DocQuery } from '../../common/api-docs.js';
import { DEFAULT_PAGE_SIZE, PageQueryDto } from '../../common/pagination.dto.js';
import { Budgets } from '../../budgets/budget.service.js';
import { TaskService } from '../../tasks/task.service.js';
import {
  AuditQueryDto,
  CreateTenantDto,
  TenantLimitsDto,
  TokenScopesDto,
  UpdateTenantDto,
} from '../../tenants/dto/tenant.dto.js';
import { TenantsService } from '../../tenants/services/tenants.service.js';

/** `/v1/admin/*`: tenant lifecycle and tokens, for operators (auditors: reads only). */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin')
export class AdminTenantsController {
  constructor(
    private readonly tenants: TenantsService,
    private readonly tasks: TaskService,
    private readonly budgets: Budgets,
  ) {}

  /** A tenant and its first token (`scopes` default every tenant scope; `issue_token: false` for none). */
  @Post('tenants')
  async create(@Body() dto: CreateTenantDto, @ChangedBy() by: ChangeBy) {
    return this.tenants.create(
      { name: dto.name, externalId: dto.external_id, scopes: dto.scopes, issueToken: dto.issue_token },
      by,
    );
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
   * Disables or enables a tenant, and/or sets its `external_id`. Disabling
   * refuses its credentials from the next request on and ends the streams
   * they hold; with `cancel_running: true` its unfinished tasks are
   * canceled too ("tenant disabled").
   */
  @Patch('tenants/:id')
  async update(@Param('id') id: string, @Body() dto: UpdateTenantDto, @ChangedBy() by: ChangeBy) {
    const tenant = await this.tenants.update(id, { disabled: dto.disabled, externalId: dto.external_id }, by);
    if (!dto.disabled || !dto.cancel_running) return tenant;
    const canceled = await this.tasks.cancelAll(tenant.id, 'tenant disabled');
    await this.tenants.recordAction('tenant.cancel_running', tenant.id, { canceled_tasks: canceled }, by);
    return { ...tenant, canceled_tasks: canceled };
  }

  /** Quota overrides: keys left out are unchanged, null restores the default, 0 is unlimited. */
  @Patch('tenants/:id/limits')
  async limits(@Param('id') id: string, @Body() dto: TenantLimitsDto, @ChangedBy() by: ChangeBy) {
    const tenant = await this.tenants.get(id);
    // Budgets: costs need prices, and none may be set below what the tenant already spent in its period.
    const budgets = await this.budgets.checkTenantLimits(tenant.id, { ...dto });
    const view = await this.tenants.setLimits(id, { ...dto, ...budgets }, by);
    this.budgets.forget(id);
    return view;
  }

  @Get('tenants/:id/tokens')
  async tokens(@Param('id') id: string) {
    return { items: await this.tenants.listTokens(id) };
  }

  /** A new token (`scopes` default every tenant scope); every other token of the tenant is revoked at once. */
  @Post('tenants/:id/tokens/rotate')
  @HttpCode(201)
  rotate(@Param('id') id: string, @Body() dto: TokenScopesDto, @ChangedBy() by: ChangeBy) {
    return this.tenants.rotate(id, by, dto.scopes);
  }

  /** An additional token (`scopes` default every tenant scope); existing ones stay valid. */
  @Post('tenants/:id/tokens')
  issue(@Param('id') id: string, @Body() dto: TokenScopesDto, @ChangedBy() by: ChangeBy) {
    return this.tenants.issueAdditional(id, by, dto.scopes);
  }

  @Delete('tenants/:id/tokens/:tokenId')
  revoke(@Param('id') id: string, @Param('tokenId') tokenId: string, @ChangedBy() by: ChangeBy) {
    return this.tenants.revoke(id, tokenId, by);
  }

  @Get('audit')
  @DocQuery(AuditQueryDto)
  async audit(@Query() q: AuditQueryDto) {
    return this.tenants.auditLog(q.limit ?? DEFAULT_PAGE_SIZE, q.cursor, q.tenant_id);
  }
}
