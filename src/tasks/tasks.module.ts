import { Module } from '@nestjs/common';
import { OrchestratorModule } from '../orchestrator/orchestrator.module.js';
import { RequestsController } from './controllers/requests.controller.js';
import { TaskRepository } from './repositories/task.repository.js';
import { TaskEventBus } from './services/event-bus.service.js';
import { InFlightRegistry } from './services/in-flight.registry.js';
import { TaskRunner } from './services/task-runner.service.js';
import { TaskService } from './services/task.service.js';
import { RunShutdown } from './services/shutdown.service.js';
import { InstanceIdentity, LeaseService } from './services/lease.service.js';

@Module({
  imports: [OrchestratorModule],
  controllers: [RequestsController],
  providers: [
    TaskRepository,
    TaskEventBus,
    InFlightRegistry,
    InstanceIdentity,
    LeaseService,
    TaskRunner,
    TaskService,
    RunShutdown,
  ],
  exports: [TaskService, InFlightRegistry],
})
export class TasksModule {}
