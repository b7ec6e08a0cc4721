import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module.js';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { ConversationsController } from './conversations.controller.js';
import { ConversationService } from './conversations.service.js';
import { NativeRuns } from './native-runs.service.js';
import { OrchestrateController } from './orchestrate.controller.js';

/** Arbiter's native API over the task machinery: `/v1/orchestrate`, agent chat, conversations. */
@Module({
  imports: [TasksModule, RegistryModule, HealthModule],
  controllers: [OrchestrateController, ConversationsController],
  providers: [NativeRuns, ConversationService],
})
export class NativeApiModule {}
