import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { PageQueryDto } from '../../common/pagination.dto.js';

const trim = ({ value }: { value: unknown }): unknown => (typeof value === 'string' ? value.trim() : value);
// No control characters: names end up in logs, rosters and agent cards.
const PRINTABLE = /^[^\p{Cc}]*$/u;

export class CreateTenantDto {
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  @Matches(PRINTABLE, { message: 'name must not contain control characters' })
  name: string;
}

export class UpdateTenantDto {
  @IsBoolean()
  disabled: boolean;

  /** With `disabled: true`: also cancel the tenant's unfinished tasks. */
  @IsOptional()
  @IsBoolean()
  cancel_running?: boolean;
}

export class AuditQueryDto extends PageQueryDto {
  @IsOptional()
  @IsUUID('all', { message: 'tenant_id must be a UUID' })
  tenant_id?: string;
}

const LIMIT = 'must be null (the default) or an integer between 0 (unlimited) and 1000000';

/** Quota overrides: a key left out is unchanged, `null` restores the deployment's default, 0 is unlimited. */
export class TenantLimitsDto {
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: LIMIT })
  @Min(0, { message: LIMIT })
  @Max(1_000_000, { message: LIMIT })
  sends_per_minute?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: LIMIT })
  @Min(0, { message: LIMIT })
  @Max(1_000_000, { message: LIMIT })
  max_running_tasks?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: LIMIT })
  @Min(0, { message: LIMIT })
  @Max(1_000_000, { message: LIMIT })
  max_open_streams?: number | null;
}
