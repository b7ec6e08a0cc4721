import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ScrapeToken } from '../common/auth.decorators.js';
import { Metrics } from './metrics.service.js';
import { AnyQuery } from '../common/body-reader.interceptor.js';

/** `GET /metrics`: the Prometheus text format, for the admin token or the scrape token (`ARBITER_METRICS_TOKEN`). */
@ApiTags('operations')
@AnyQuery()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  /** The access guard has checked the token (see `ScrapeToken`). */
  @ScrapeToken()
  @Get()
  @Header('Cache-Control', 'no-store')
  async scrape(@Res({ passthrough: true }) res: Response): Promise<string> {
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    return this.metrics.registry.metrics();
  }
}
