import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { A2aController } from './controllers/a2a.controller.js';
import { AgentCardController } from './controllers/agent-card.controller.js';
import { A2aDispatcher } from './services/a2a-dispatcher.service.js';
import { AgentCardService } from './services/agent-card.service.js';

@Module({
  imports: [TasksModule, RegistryModule],
  controllers: [AgentCardController, A2aController],
  providers: [A2aDispatcher, AgentCardService],
})
export class A2aInboundModule {}
