import { Module } from '@nestjs/common';
import { OrchestratorModule } from '../orchestrator/orchestrator.module.js';
import { RequestsController } from './controllers/requests.controller.js';
import { TaskRepository } from './repositories/task.repository.js';
import { TaskEventBus } from './services/event-bus.service.js';
import { InFlightRegistry } from './services/in-flight.registry.js';
import { TaskRunner } from './services/task-runner.service.js';
import { TaskService } from './services/task.service.js';
import { RunShutdown } from './services/shutdown.service.js';
import { LeaseService } from './services/lease.service.js';
import { ChangeListener } from './services/change-listener.service.js';
import { InstanceIdentity } from './services/instance-identity.js';

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
    ChangeListener,
  ],
  exports: [TaskService, InFlightRegistry, ChangeListener],
})
export class TasksModule {}
