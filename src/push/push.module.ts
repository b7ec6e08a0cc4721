import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module.js';
import { PushDeliveriesController } from './controllers/push-deliveries.controller.js';
import { PushConfigRepository } from './repositories/push-config.repository.js';
import { PushDeliveryRepository } from './repositories/push-delivery.repository.js';
import { PushService } from './services/push.service.js';
import { PushWorker } from './services/push-worker.service.js';

/**
 * Push notifications (spec §3.1.7–3.1.10, §4.3): configs per task, and the
 * worker that delivers the task event log to webhooks on every replica.
 */
@Module({
  imports: [TasksModule],
  controllers: [PushDeliveriesController],
  providers: [PushConfigRepository, PushDeliveryRepository, PushService, PushWorker],
  exports: [PushService],
})
export class PushModule {}
