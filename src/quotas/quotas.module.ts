import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module.js';
import { PgThrottlerStorage } from './pg-throttler.storage.js';
import { QuotaService } from './quota.service.js';
import { SendThrottleGuard } from './send-throttle.guard.js';
import { UsageService } from './usage.service.js';

/** Per-tenant quotas: the send rate (shared across replicas through PostgreSQL), running tasks, open streams. */
@Module({
  imports: [TasksModule],
  providers: [PgThrottlerStorage, UsageService, QuotaService, SendThrottleGuard],
  exports: [QuotaService, SendThrottleGuard, PgThrottlerStorage],
})
export class QuotasModule {}
