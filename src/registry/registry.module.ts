import { Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module.js';
import { A2aOutboundModule } from '../a2a-outbound/a2a-outbound.module.js';
import { AgentsController } from './controllers/agents.controller.js';
import { AgentRepository } from './repositories/agent.repository.js';
import { AgentCatalog } from './services/agent-catalog.service.js';

@Module({
  imports: [TenantsModule, A2aOutboundModule],
  controllers: [AgentsController],
  providers: [AgentRepository, AgentCatalog],
  exports: [AgentCatalog],
})
export class RegistryModule {}
