import { Controller, Get, Header, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { DocQuery } from '../../common/api-docs.js';
import { AdminOnly } from '../../common/auth.decorators.js';
import { answerReport, DocUsageReport } from '../../usage/usage-answer.js';
import { AdminUsageQueryDto, groupKeys } from '../../usage/usage-query.dto.js';
import { UsageReports } from '../../usage/usage-reports.service.js';

/** `GET /v1/admin/usage`: model usage across tenants (or one, `tenant`), for operators and auditors. */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin/usage')
export class AdminUsageController {
  constructor(private readonly reports: UsageReports) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @DocQuery(AdminUsageQueryDto)
  @DocUsageReport()
  async usage(@Query() q: AdminUsageQueryDto, @Res({ passthrough: true }) res: Response): Promise<unknown> {
    const period = UsageReports.period(q.from, q.to);
    const report = await this.reports.report({ tenantId: q.tenant, ...period, groupBy: groupKeys(q.group_by) });
    return answerReport(res, report, q.format);
  }
}
