import { Module } from '@nestjs/common';
import { OrchestratorModule } from '../orchestrator/orchestrator.module.js';
import { EventBus } from './event-log/event-bus.js';
import { EventLog } from './event-log/event-log.service.js';
import { ReplicaNotices } from './event-log/replica-notices.service.js';
import { TaskEventRepository } from './repositories/task-event.repository.js';
import { TaskRepository } from './repositories/task.repository.js';
import { TaskWrites } from './repositories/task-writes.js';
import { LeaseFence } from './runs/lease-fence.js';
import { LeaseService } from './runs/lease.service.js';
import { RunEnd } from './runs/run-end.js';
import { RunRegistry } from './runs/run-registry.js';
import { RunShutdown } from './runs/shutdown.service.js';
import { TaskRunner } from './runs/task-runner.service.js';
import { TaskService } from './task.service.js';
import { TaskFiles } from './task-files.service.js';
import { TaskFileRepository } from './repositories/task-file.repository.js';

/**
 * The task engine: task rows and their event log (`event-log/`), the runs
 * that write it (`runs/`), and `TaskService`, the one way in. Surfaces (A2A,
 * the native API) use `TaskService` and `EventLog.tail`, and `TaskFiles` to put stored
 * files' bytes back into what they render.
 */
@Module({
  imports: [OrchestratorModule],
  providers: [
    TaskRepository,
    TaskEventRepository,
    TaskWrites,
    EventBus,
    EventLog,
    ReplicaNotices,
    RunRegistry,
    RunEnd,
    TaskRunner,
    LeaseFence,
    LeaseService,
    RunShutdown,
    TaskService,
    TaskFileRepository,
    TaskFiles,
  ],
  exports: [TaskService, EventLog, RunRegistry, TaskFiles],
})
export class TasksModule {}
