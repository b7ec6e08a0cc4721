import { Type } from 'class-transformer';
import { JSONSchema } from 'class-validator-jsonschema';
import { nestedSchema } from '../common/api-docs.js';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';

/**
 * What runs an agent's turns when it is not a model: a remote A2A agent of
 * the tenant's registry (`/v1/remote-agents`) or of the operator's shared
 * one (`a2a_agents.json`), which Arbiter follows and mirrors into its own
 * task log (gateway mode, docs/gateway.md).
 */
export interface AgentBackend {
  /** The registry entry's name. */
  remote: string;
  /** Which registry: absent, the tenant's own entry first, then the shared one (as `/a2a` resolves names). */
  registry?: 'tenant' | 'shared';
  timeouts: BackendTimeouts;
}

/** How long Arbiter waits on the upstream before the task ends `failed` with the reason. */
export interface BackendTimeouts {
  /** From sending a message to the upstream's first answer (event, task or reply). */
  first_event_ms: number;
  /** Between two events of the upstream (streamed), or without a change (polled). */
  idle_ms: number;
  /** One turn from send to a settled state (completed, failed, input-required …). */
  total_ms: number;
}

export const BACKEND_TIMEOUT_DEFAULTS: BackendTimeouts = {
  first_event_ms: 30_000,
  idle_ms: 120_000,
  total_ms: 900_000,
};

export const REGISTRY_KINDS = ['tenant', 'shared'] as const;

export class BackendTimeoutsDto {
  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(600_000)
  first_event_ms?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  idle_ms?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(86_400_000)
  total_ms?: number;
}

export class BackendDto {
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, { message: 'remote must name a remote agent of the registry' })
  remote!: string;

  @IsOptional()
  @IsIn(REGISTRY_KINDS)
  registry?: 'tenant' | 'shared';

  @IsOptional()
  @IsObject({ message: 'timeouts must be an object of first_event_ms, idle_ms and total_ms' })
  @ValidateNested()
  @Type(() => BackendTimeoutsDto)
  @JSONSchema(nestedSchema(BackendTimeoutsDto))
  timeouts?: BackendTimeoutsDto;
}

/** The backend as stored: timeouts filled from the defaults. */
export function toBackend(dto: BackendDto): AgentBackend {
  const t = dto.timeouts ?? {};
  return {
    remote: dto.remote,
    ...(dto.registry ? { registry: dto.registry } : {}),
    timeouts: {
      first_event_ms: t.first_event_ms ?? BACKEND_TIMEOUT_DEFAULTS.first_event_ms,
      idle_ms: t.idle_ms ?? BACKEND_TIMEOUT_DEFAULTS.idle_ms,
      total_ms: t.total_ms ?? BACKEND_TIMEOUT_DEFAULTS.total_ms,
    },
  };
}
