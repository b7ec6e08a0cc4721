import { Controller, Get, Header, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { DocQuery } from '../../common/api-docs.js';
import { CurrentTenant, RequireScope, type TenantPrincipal } from '../../common/auth.decorators.js';
import { DocStats, StatsQueryDto } from '../../stats/stats-query.dto.js';
import { StatsReports, type StatsReport } from '../../stats/stats-reports.service.js';

/** `GET /v1/stats`: the caller's tenant's tasks, run times, A2A errors and usage over a window (the console's overview). */
@ApiTags('native')
@Controller('v1/stats')
export class StatsController {
  constructor(private readonly reports: StatsReports) {}

  @RequireScope('tasks:read')
  @Get()
  @Header('Cache-Control', 'no-store')
  @DocQuery(StatsQueryDto)
  @DocStats()
  stats(@CurrentTenant() t: TenantPrincipal, @Query() q: StatsQueryDto): Promise<StatsReport> {
    return this.reports.report(q.window ?? '1h', t.tenantId);
  }
}
