import { QuotasModule } from '../quotas/quotas.module.js';
import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { ConversationsController } from './controllers/conversations.controller.js';
import { OrchestrateController } from './controllers/orchestrate.controller.js';
import { RequestsController } from './controllers/requests.controller.js';
import { StatsController } from './controllers/stats.controller.js';
import { StatsModule } from '../stats/stats.module.js';
import { UsageController } from './controllers/usage.controller.js';
import { UsageModule } from '../usage/usage.module.js';
import { ConversationService } from './services/conversations.service.js';
import { NativeRuns } from './services/native-runs.service.js';
import { NativeTail } from './services/native-tail.service.js';

/**
 * Arbiter's native API over the task engine: `/v1/orchestrate`, agent chat,
 * conversations, `/v1/requests` with the native event catalogue, and
 * `/v1/usage` (the tenant's model usage and cost) and `/v1/stats` (the overview's figures).
 */
@Module({
  imports: [TasksModule, RegistryModule, HealthModule, TenantsModule, QuotasModule, UsageModule, StatsModule],
  controllers: [OrchestrateController, ConversationsController, RequestsController, UsageController, StatsController],
  providers: [NativeRuns, NativeTail, ConversationService],
})
export class NativeApiModule {}
