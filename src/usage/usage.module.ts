import { Module } from '@nestjs/common';
import { Prices } from './prices.service.js';
import { UsageMeter } from './usage-meter.js';
import { UsageReports } from './usage-reports.service.js';

/**
 * Usage accounting: the operator's model prices (`Prices`), the usage
 * counters (`UsageMeter`) and the reports over the rollups (`UsageReports`).
 * The ledger itself is written by the task log's writer, in the statement
 * that writes each call's event (`tasks/statements/usage.sql.ts`); the
 * routes are the surfaces' (`GET /v1/usage`, `GET /v1/admin/usage`).
 */
@Module({
  providers: [Prices, UsageMeter, UsageReports],
  exports: [Prices, UsageMeter, UsageReports],
})
export class UsageModule {}
