import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { UsageModule } from '../usage/usage.module.js';
import { BudgetRepository } from './budget.repository.js';
import { Budgets } from './budget.service.js';
import { BudgetThresholds } from './budget-thresholds.service.js';
import { BudgetViews } from './budget-views.service.js';
import { BudgetsController } from './controllers/budgets.controller.js';
import { AdminBudgetsController } from './controllers/admin-budgets.controller.js';

/**
 * Token and cost budgets per tenant and agent (docs/budgets.md): the limits,
 * the checks before a run starts and before each model call (`Budgets.guard`),
 * the soft threshold, and the routes that set and read them.
 */
@Module({
  imports: [TenantsModule, UsageModule, RegistryModule],
  controllers: [BudgetsController, AdminBudgetsController],
  providers: [BudgetRepository, Budgets, BudgetViews, BudgetThresholds],
  exports: [Budgets, BudgetViews],
})
export class BudgetsModule {}
