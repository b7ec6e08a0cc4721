import { Controller, Get, Header, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { IsOptional, IsUUID } from 'class-validator';
import { AdminOnly } from '../../common/auth.decorators.js';
import { DocQuery } from '../../common/api-docs.js';
import { DocAdminBudgets } from '../budget-docs.js';
import { Budgets } from '../budget.service.js';
import { BudgetViews } from '../budget-views.service.js';

export class AdminBudgetsQueryDto {
  /** Only this tenant's budgets (its id). */
  @IsOptional()
  @IsUUID('all', { message: 'tenant must be a tenant id (a UUID)' })
  tenant?: string;
}

/** `GET /v1/admin/budgets`: budgets and their use across tenants, for operators and auditors. */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin/budgets')
export class AdminBudgetsController {
  constructor(
    private readonly budgets: Budgets,
    private readonly views: BudgetViews,
  ) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @DocQuery(AdminBudgetsQueryDto)
  @DocAdminBudgets()
  list(@Query() q: AdminBudgetsQueryDto) {
    return this.views.adminView(q.tenant);
  }
}
