import { Module } from '@nestjs/common';
import { ModelsController } from './models.controller.js';
import { OrchestratorService } from './orchestrator.service.js';
import { ModelRouter } from './providers/model-router.service.js';
import { ORCHESTRATOR } from './run-event.js';

@Module({
  controllers: [ModelsController],
  providers: [ModelRouter, OrchestratorService, { provide: ORCHESTRATOR, useExisting: OrchestratorService }],
  exports: [ORCHESTRATOR, ModelRouter],
})
export class OrchestratorModule {}
