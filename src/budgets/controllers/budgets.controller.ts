import { Body, Controller, Delete, Get, Header, HttpCode, Param, Put } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import {
  ChangedBy,
  CurrentTenant,
  RequireScope,
  type ChangeBy,
  type TenantPrincipal,
} from '../../common/auth.decorators.js';
import { DocBody } from '../../common/api-docs.js';
import { AGENT_USE_SCHEMA, DocTenantBudgets, LIMITS_SCHEMA } from '../budget-docs.js';
import { Budgets } from '../budget.service.js';
import { BudgetViews } from '../budget-views.service.js';

/** A tenant's budgets: reading them, and setting its agents' own within the tenant's (docs/budgets.md). */
@ApiTags('agents')
@Controller('v1')
export class BudgetsController {
  constructor(
    private readonly budgets: Budgets,
    private readonly views: BudgetViews,
  ) {}

  /** The tenant's budgets and its and its agents' use this UTC day and month. */
  @RequireScope('tasks:read', 'agents:read', 'agents:write')
  @Get('budgets')
  @Header('Cache-Control', 'no-store')
  @DocTenantBudgets()
  list(@CurrentTenant() t: TenantPrincipal) {
    return this.views.tenantView(t.tenantId);
  }

  /**
   * Sets the agent's budgets (a key left out or null: none). Each must be at most the tenant's own of the same
   * key and not below what the agent already spent in its period.
   */
  @RequireScope('agents:write')
  @Put('agents/:id/budget')
  @DocBody(LIMITS_SCHEMA)
  @ApiOkResponse({ description: 'the agent’s budgets and use', schema: AGENT_USE_SCHEMA })
  set(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Body() body: unknown, @ChangedBy() by: ChangeBy) {
    return this.budgets.setAgent(t, id, body, by);
  }

  @RequireScope('agents:write')
  @Delete('agents/:id/budget')
  @HttpCode(204)
  async clear(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @ChangedBy() by: ChangeBy): Promise<void> {
    await this.budgets.clearAgent(t, id, by);
  }
}
