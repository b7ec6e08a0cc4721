import { Global, Module } from '@nestjs/common';
import { MetricsCollectors } from './collectors.js';
import { MetricsController } from './metrics.controller.js';
import { Metrics } from './metrics.service.js';

/**
 * Prometheus metrics: one registry per application, injectable anywhere (see `Metrics`), and `GET /metrics`
 * (its token is checked by the global access guard: `ScrapeToken`).
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [Metrics, MetricsCollectors],
  exports: [Metrics],
})
export class MetricsModule {}
