import { Module } from '@nestjs/common';
import { ModelsController } from './models.controller.js';
import { OrchestratorService } from './orchestrator.service.js';
import { ModelRouter } from './providers/model-router.service.js';
import { MemoryService } from './tools/memory.service.js';
import { ORCHESTRATOR } from './run-event.js';
import { RegistryModule } from '../registry/registry.module.js';
import { A2aOutboundModule } from '../a2a-outbound/a2a-outbound.module.js';
import { McpModule } from '../mcp/mcp.module.js';

@Module({
  imports: [RegistryModule, A2aOutboundModule, McpModule],
  controllers: [ModelsController],
  providers: [
    ModelRouter,
    MemoryService,
    OrchestratorService,
    { provide: ORCHESTRATOR, useExisting: OrchestratorService },
  ],
  exports: [ORCHESTRATOR, ModelRouter, MemoryService],
})
export class OrchestratorModule {}
