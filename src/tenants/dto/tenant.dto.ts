import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsBoolean,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { TENANT_SCOPES, type TenantScope } from '../../common/auth.decorators.js';
import { EmptyBodyAllowed } from '../../common/validation.pipe.js';
import { OmittableNotNull } from '../../common/validation.js';
import { PageQueryDto } from '../../common/pagination.dto.js';

const trim = ({ value }: { value: unknown }): unknown => (typeof value === 'string' ? value.trim() : value);
// No control characters: names end up in logs, rosters and agent cards.
const PRINTABLE = /^[^\p{Cc}]*$/u;

/** What an `external_id` may be (a JWT's tenant claim is looked up only when it could be one). */
export const EXTERNAL_ID = /^[\x21-\x7e]{1,256}$/;
const EXTERNAL_ID_MESSAGE = 'external_id must be 1 to 256 printable ASCII characters without spaces';
const SCOPES_MESSAGE = `scopes must be a non-empty list of ${TENANT_SCOPES.join(', ')}`;

/** The scopes of a new opaque token: default every tenant scope (the body may be left out). */
@EmptyBodyAllowed()
export class TokenScopesDto {
  @OmittableNotNull()
  @IsArray({ message: SCOPES_MESSAGE })
  @ArrayNotEmpty({ message: SCOPES_MESSAGE })
  @ArrayMaxSize(TENANT_SCOPES.length, { message: SCOPES_MESSAGE })
  @IsIn(TENANT_SCOPES, { each: true, message: SCOPES_MESSAGE })
  scopes?: TenantScope[];
}

export class CreateTenantDto extends TokenScopesDto {
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  @Matches(PRINTABLE, { message: 'name must not contain control characters' })
  name: string;

  /** What a trusted issuer's tenant claim names this tenant by. */
  @IsOptional()
  @IsString({ message: EXTERNAL_ID_MESSAGE })
  @Matches(EXTERNAL_ID, { message: EXTERNAL_ID_MESSAGE })
  external_id?: string;

  /** false: no opaque token (callers come with JWTs from a trusted issuer). */
  @IsOptional()
  @IsBoolean()
  issue_token?: boolean;
}

export class UpdateTenantDto {
  @ValidateIf((o: UpdateTenantDto) => o.disabled !== undefined || o.external_id === undefined)
  @IsBoolean({ message: 'disabled must be a boolean (give disabled, external_id or both)' })
  disabled?: boolean;

  /** A trusted issuer's tenant claim value for this tenant; null clears it. */
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsString({ message: EXTERNAL_ID_MESSAGE })
  @Matches(EXTERNAL_ID, { message: EXTERNAL_ID_MESSAGE })
  external_id?: string | null;

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

const TOKENS = 'must be null (no budget) or a whole number of tokens from 1 to 10^12';
const COST = 'must be null (no budget) or an amount from 0.000001 to 10^9 in the prices file’s currency';
const REQUESTS = 'must be null (no budget) or a whole number of messages from 1 to 10^9';

/**
 * Quota overrides: a key left out is unchanged, `null` restores the deployment's default, 0 is unlimited.
 * Budgets (`tokens_per_*`, `cost_per_*`, `requests_per_*`, docs/budgets.md): a key left out is unchanged, `null`
 * clears it.
 */
export class TenantLimitsDto {
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: `tokens_per_day ${TOKENS}` })
  @Min(1, { message: `tokens_per_day ${TOKENS}` })
  @Max(1e12, { message: `tokens_per_day ${TOKENS}` })
  tokens_per_day?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: `tokens_per_month ${TOKENS}` })
  @Min(1, { message: `tokens_per_month ${TOKENS}` })
  @Max(1e12, { message: `tokens_per_month ${TOKENS}` })
  tokens_per_month?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: `cost_per_day ${COST}` })
  @Min(0.000001, { message: `cost_per_day ${COST}` })
  @Max(1e9, { message: `cost_per_day ${COST}` })
  cost_per_day?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: `cost_per_month ${COST}` })
  @Min(0.000001, { message: `cost_per_month ${COST}` })
  @Max(1e9, { message: `cost_per_month ${COST}` })
  cost_per_month?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: `requests_per_day ${REQUESTS}` })
  @Min(1, { message: `requests_per_day ${REQUESTS}` })
  @Max(1e9, { message: `requests_per_day ${REQUESTS}` })
  requests_per_day?: number | null;

  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsInt({ message: `requests_per_month ${REQUESTS}` })
  @Min(1, { message: `requests_per_month ${REQUESTS}` })
  @Max(1e9, { message: `requests_per_month ${REQUESTS}` })
  requests_per_month?: number | null;

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
