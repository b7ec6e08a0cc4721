import { Global, Module } from '@nestjs/common';
import { TenantsModule } from '../tenants/tenants.module.js';
import { MetricsCollectors } from './collectors.js';
import { MetricsController } from './metrics.controller.js';
import { Metrics } from './metrics.service.js';

/** Prometheus metrics: one registry per application, injectable anywhere (see `Metrics`). */
@Global()
@Module({
  imports: [TenantsModule],
  controllers: [MetricsController],
  providers: [Metrics, MetricsCollectors],
  exports: [Metrics],
})
export class MetricsModule {}
