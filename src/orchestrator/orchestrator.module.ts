import { Module } from '@nestjs/common';
import { OrchestratorService } from './orchestrator.service.js';
import { ORCHESTRATOR } from './run-event.js';

@Module({
  providers: [OrchestratorService, { provide: ORCHESTRATOR, useExisting: OrchestratorService }],
  exports: [ORCHESTRATOR],
})
export class OrchestratorModule {}
