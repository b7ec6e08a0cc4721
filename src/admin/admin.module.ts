import { BudgetsModule } from '../budgets/budgets.module.js';
import { Module } from '@nestjs/common';
import { A2aOutboundModule } from '../a2a-outbound/a2a-outbound.module.js';
import { McpModule } from '../mcp/mcp.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { AdminIdentityController } from './controllers/admin-identity.controller.js';
import { AdminTasksController } from './controllers/admin-tasks.controller.js';
import { AdminRegistriesController } from './controllers/admin-registries.controller.js';
import { AdminTenantsController } from './controllers/admin-tenants.controller.js';
import { AdminUsageController } from './controllers/admin-usage.controller.js';
import { AdminStatsController } from './controllers/admin-stats.controller.js';
import { StatsModule } from '../stats/stats.module.js';
import { UsageModule } from '../usage/usage.module.js';

/** `/v1/admin/*`: the operators' routes over tenants, identity (issuers, operator tokens), tasks, usage, and the registries as loaded. */
@Module({
  imports: [TenantsModule, TasksModule, A2aOutboundModule, McpModule, UsageModule, BudgetsModule, StatsModule],
  controllers: [
    AdminTenantsController,
    AdminIdentityController,
    AdminTasksController,
    AdminRegistriesController,
    AdminUsageController,
    AdminStatsController,
  ],
})
export class AdminModule {}
