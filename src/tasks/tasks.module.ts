import { BudgetsModule } from '../budgets/budgets.module.js';
import { Module } from '@nestjs/common';
import { OrchestratorModule } from '../orchestrator/orchestrator.module.js';
import { StatsModule } from '../stats/stats.module.js';
import { UsageModule } from '../usage/usage.module.js';
import { EventBus } from './event-log/event-bus.js';
import { EventLog } from './event-log/event-log.service.js';
import { ReplicaNotices } from './event-log/replica-notices.service.js';
import { EventReads } from './repositories/event-reads.repository.js';
import { LeaseRepository } from './repositories/leases.repository.js';
import { TaskFileRepository } from './repositories/task-file.repository.js';
import { TaskLogWriter } from './repositories/task-log.writer.js';
import { TaskReads } from './repositories/task-reads.repository.js';
import { RunCounts } from './run-counts.service.js';
import { LeaseFence } from './runs/lease-fence.js';
import { LeaseService } from './runs/lease.service.js';
import { FollowTakeover } from './runs/follow-takeover.service.js';
import { RunEnd } from './runs/run-end.js';
import { RunRegistry } from './runs/run-registry.js';
import { RunShutdown } from './runs/shutdown.service.js';
import { TaskRunner } from './runs/task-runner.service.js';
import { TaskFiles } from './task-files.service.js';
import { TaskIntake } from './task-intake.service.js';
import { TaskService } from './task.service.js';
import { TaskViews } from './task-views.service.js';

/**
 * The task engine: task rows and their event log — written only by
 * `TaskLogWriter` (`repositories/`, its SQL in `statements/`), followed by
 * `event-log/` — the runs that write it (`runs/`), and `TaskService`, the
 * one way in. Surfaces (A2A, the native API, push) use `TaskService` and
 * `EventLog` (tail, and the batches push delivers), `TaskFiles` to put
 * stored files' bytes back into what they render, and `RunCounts` for the
 * running-task caps.
 */
@Module({
  imports: [OrchestratorModule, UsageModule, BudgetsModule, StatsModule],
  providers: [
    TaskReads,
    EventReads,
    TaskLogWriter,
    LeaseRepository,
    TaskFileRepository,
    EventBus,
    EventLog,
    ReplicaNotices,
    RunRegistry,
    RunEnd,
    TaskRunner,
    LeaseFence,
    FollowTakeover,
    LeaseService,
    RunShutdown,
    TaskViews,
    TaskIntake,
    TaskService,
    TaskFiles,
    RunCounts,
  ],
  exports: [TaskService, EventLog, TaskFiles, RunCounts],
})
export class TasksModule {}
