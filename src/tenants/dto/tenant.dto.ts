import { Transform } from 'class-transformer';
import { IsBoolean, IsNotEmpty, IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
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
