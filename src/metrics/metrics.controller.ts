import { Controller, Get, Header, Req } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { AppConfig } from '../config/app-config.js';
import { AdminTokenService } from '../tenants/services/admin-token.service.js';
import { secretsEqual } from '../tenants/services/token-crypto.js';
import { Metrics } from './metrics.service.js';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** `GET /metrics`: the Prometheus text format, for the admin token or the scrape token (`ARBITER_METRICS_TOKEN`). */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    private readonly admin: AdminTokenService,
    private readonly config: AppConfig,
  ) {}

  @Public()
  @Get()
  @Header('Cache-Control', 'no-store')
  async scrape(@Req() req: Request): Promise<string> {
    const token = BEARER.exec(req.headers.authorization ?? '')?.[1];
    const scrape = this.config.metricsToken;
    if (!token || !(this.admin.verify(token) || (scrape !== undefined && secretsEqual(token, scrape)))) {
      throw new DomainError('unauthorized', 'the admin token or the metrics token (ARBITER_METRICS_TOKEN) is required');
    }
    req.res?.setHeader('Content-Type', this.metrics.registry.contentType);
    return this.metrics.registry.metrics();
  }
}
