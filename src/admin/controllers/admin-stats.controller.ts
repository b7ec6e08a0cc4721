import { Controller, Get, Header, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { DocQuery } from '../../common/api-docs.js';
import { AdminOnly } from '../../common/auth.decorators.js';
import { AdminStatsQueryDto, DocStats } from '../../stats/stats-query.dto.js';
import { StatsReports, type StatsReport } from '../../stats/stats-reports.service.js';

/** `GET /v1/admin/stats`: the overview's figures across tenants (or one, `tenant`), for operators and auditors. */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin/stats')
export class AdminStatsController {
  constructor(private readonly reports: StatsReports) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @DocQuery(AdminStatsQueryDto)
  @DocStats()
  stats(@Query() q: AdminStatsQueryDto): Promise<StatsReport> {
    return this.reports.report(q.window ?? '1h', q.tenant);
  }
}
