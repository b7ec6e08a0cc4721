import { IsIn, IsISO8601, IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import type { GroupKey } from './usage-reports.service.js';

const TENANT_KEYS = 'agent|model|provider|day|hour';
const list = (keys: string): RegExp => new RegExp(`^(${keys})(,(${keys}))*$`);

/** `GET /v1/usage`: the caller's tenant's usage over a period, grouped, as JSON or CSV. */
export class UsageQueryDto {
  /** Start of the period (ISO 8601; rounded down to the hour). Default: 30 days before `to`. */
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'from must be an ISO 8601 date or time, e.g. 2025-06-01' })
  from?: string;

  /** End of the period, exclusive (ISO 8601; rounded up to the hour). Default: now. At most 400 days after `from`. */
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'to must be an ISO 8601 date or time, e.g. 2025-07-01' })
  to?: string;

  /** A comma list of agent, model, provider, day, hour (rows per combination). Default: totals only. */
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Matches(list(TENANT_KEYS), { message: 'group_by must be a comma list of agent, model, provider, day, hour' })
  group_by?: string;

  /** `json` (default) or `csv` (a header row, then one line per row). */
  @IsOptional()
  @IsIn(['json', 'csv'], { message: 'format must be json or csv' })
  format?: 'json' | 'csv';
}

/** `GET /v1/admin/usage`: every tenant's usage (or one's), also groupable by tenant. */
export class AdminUsageQueryDto {
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'from must be an ISO 8601 date or time, e.g. 2025-06-01' })
  from?: string;

  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'to must be an ISO 8601 date or time, e.g. 2025-07-01' })
  to?: string;

  /** A comma list of tenant, agent, model, provider, day, hour. */
  @IsOptional()
  @IsString()
  @MaxLength(80)
  @Matches(list(`tenant|${TENANT_KEYS}`), {
    message: 'group_by must be a comma list of tenant, agent, model, provider, day, hour',
  })
  group_by?: string;

  @IsOptional()
  @IsIn(['json', 'csv'], { message: 'format must be json or csv' })
  format?: 'json' | 'csv';

  /** Only this tenant's usage (its id). */
  @IsOptional()
  @IsUUID('all', { message: 'tenant must be a tenant id (a UUID)' })
  tenant?: string;
}

/** The group keys of a validated `group_by`, each once, in the order given. */
export function groupKeys(groupBy: string | undefined): GroupKey[] {
  return groupBy ? [...new Set(groupBy.split(',') as GroupKey[])] : [];
}
