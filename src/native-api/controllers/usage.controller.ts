import { Controller, Get, Header, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { DocQuery } from '../../common/api-docs.js';
import { CurrentTenant, RequireScope, type TenantPrincipal } from '../../common/auth.decorators.js';
import { answerReport, DocUsageReport } from '../../usage/usage-answer.js';
import { groupKeys, UsageQueryDto } from '../../usage/usage-query.dto.js';
import { UsageReports } from '../../usage/usage-reports.service.js';

/** `GET /v1/usage`: the caller's tenant's model usage — tokens and cost — over a period, grouped. */
@ApiTags('native')
@Controller('v1/usage')
export class UsageController {
  constructor(private readonly reports: UsageReports) {}

  /**
   * Any one of these scopes reads it: a dashboard that may read tasks, or one that may read agents
   * (`agents:write` allows what `agents:read` does). A calling agent's `a2a:invoke` alone does not.
   */
  @RequireScope('tasks:read', 'agents:read', 'agents:write')
  @Get()
  @Header('Cache-Control', 'no-store')
  @DocQuery(UsageQueryDto)
  @DocUsageReport()
  async usage(
    @CurrentTenant() t: TenantPrincipal,
    @Query() q: UsageQueryDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    const period = UsageReports.period(q.from, q.to);
    const report = await this.reports.report({ tenantId: t.tenantId, ...period, groupBy: groupKeys(q.group_by) });
    return answerReport(res, report, q.format);
  }
}
