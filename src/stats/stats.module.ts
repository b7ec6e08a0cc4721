import { Module } from '@nestjs/common';
import { BudgetsModule } from '../budgets/budgets.module.js';
import { UsageModule } from '../usage/usage.module.js';
import { StatsRecorder } from './stats-recorder.service.js';
import { StatsReports } from './stats-reports.service.js';

/**
 * The overview's statistics: `StatsRecorder` counts tasks, run times and A2A
 * errors in memory and adds them to the stats tables every few seconds;
 * `StatsReports` reads them (with the usage rollups and the budget views) for `GET /v1/stats` and
 * `GET /v1/admin/stats` (the surfaces' routes).
 */
@Module({
  imports: [UsageModule, BudgetsModule],
  providers: [StatsRecorder, StatsReports],
  exports: [StatsRecorder, StatsReports],
})
export class StatsModule {}
