import {
  ArrayMaxSize,
  IsArray,
  IsObject,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { Type } from 'class-transformer';
import { ValidateNested } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { nestedSchema } from '../common/api-docs.js';
import { grantTool, isToolGrant, KNOWN_TOOLS } from './tools.js';
import { BackendDto, toBackend, type AgentBackend } from './backend.js';

export const AGENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MASTER_AGENT_ID = 'index';

export const BREVITY_LEVELS = ['off', 'lite', 'full', 'ultra'] as const;
export const AGENT_MODES = ['standard', 'planner', 'writer'] as const;

/** An agent's constitution with every default applied: what is stored and served. */
export interface Constitution {
  name: string;
  role: string;
  personality: string;
  goal: string;
  /** null: the server's default model (`ARBITER_DEFAULT_MODEL` once providers exist). */
  model: string | null;
  max_tokens: number;
  temperature: number;
  brevity: (typeof BREVITY_LEVELS)[number];
  mode: (typeof AGENT_MODES)[number];
  rules: string[];
  capabilities: string[];
  /** A remote-backed agent (gateway mode): the remote A2A agent that answers instead of a model. Absent: a model. */
  backend?: AgentBackend;
}

export type ConstitutionField = keyof Constitution;

export const CONSTITUTION_DEFAULTS: Omit<Constitution, 'name'> = {
  role: '',
  personality: '',
  goal: '',
  model: null,
  max_tokens: 4096,
  temperature: 0.7,
  brevity: 'lite',
  mode: 'standard',
  rules: [],
  capabilities: [],
};

const NO_CONTROL = /^[^\p{Cc}]*$/u;
const NO_CONTROL_MULTILINE = /^[^\p{Cc}]*(?:[\n\t][^\p{Cc}]*)*$/u;

@ValidatorConstraint({ name: 'capability' })
class CapabilityConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (!Array.isArray(value)) return true; // IsArray reports it
    return value.every((v) => typeof v !== 'string' || !v.startsWith('/') || isToolGrant(v));
  }

  defaultMessage(args?: ValidationArguments): string {
    const unknown = Array.isArray(args?.value)
      ? (args.value as unknown[]).filter(
          (v): v is string => typeof v === 'string' && v.startsWith('/') && !isToolGrant(v),
        )
      : [];
    return `unknown tool ${unknown.map((u) => `"${u}"`).join(', ')} in capabilities; known tools: ${KNOWN_TOOLS.join(', ')}, and /mcp:<server> (entries without a leading "/" are descriptive skills)`;
  }
}

/**
 * Every constitution field, each optional; `null` means "the default". Used
 * for create (then defaults fill the gaps) and for PATCH (then the stored
 * values fill them).
 */
export class ConstitutionDto {
  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Matches(NO_CONTROL, { message: 'name must not contain control characters' })
  name?: string | null;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  @Matches(NO_CONTROL, { message: 'role must not contain control characters' })
  role?: string | null;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @Matches(NO_CONTROL_MULTILINE, {
    message: 'personality must not contain control characters other than newlines and tabs',
  })
  personality?: string | null;

  @IsOptional()
  @IsString()
  @MaxLength(4000)
  @Matches(NO_CONTROL_MULTILINE, { message: 'goal must not contain control characters other than newlines and tabs' })
  goal?: string | null;

  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/, {
    message:
      'model must be 1-128 characters of letters, digits and ._:/@+- (e.g. "anthropic/claude-sonnet-4-5", "ollama/llama3")',
  })
  model?: string | null;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(200_000)
  max_tokens?: number | null;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(2)
  temperature?: number | null;

  @IsOptional()
  @IsIn(BREVITY_LEVELS)
  brevity?: Constitution['brevity'] | null;

  @IsOptional()
  @IsIn(AGENT_MODES)
  mode?: Constitution['mode'] | null;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(64)
  @IsString({ each: true })
  @Length(1, 1000, { each: true })
  @Matches(NO_CONTROL_MULTILINE, { each: true, message: 'each rule must be text without control characters' })
  rules?: string[] | null;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(64)
  @IsString({ each: true })
  @Length(1, 200, { each: true })
  @Matches(NO_CONTROL, { each: true, message: 'each capability must be text without control characters' })
  @Validate(CapabilityConstraint)
  capabilities?: string[] | null;

  @IsOptional()
  @IsObject({ message: 'backend must be an object naming its remote' })
  @ValidateNested()
  @Type(() => BackendDto)
  @JSONSchema(nestedSchema(BackendDto))
  backend?: BackendDto | null;
}

/** The fields a constitution accepts, for telling "unknown field" apart from a body wrapper. */
export const CONSTITUTION_FIELDS: readonly ConstitutionField[] = [
  'name',
  'role',
  'personality',
  'goal',
  'model',
  'max_tokens',
  'temperature',
  'brevity',
  'mode',
  'rules',
  'capabilities',
  'backend',
];

/** Applies `patch` over `base` (nulls reset to defaults) and fills the rest from defaults. */
export function applyConstitution(id: string, base: Partial<Constitution>, patch: ConstitutionDto): Constitution {
  const out: Constitution = { name: id, ...CONSTITUTION_DEFAULTS, ...base };
  for (const field of CONSTITUTION_FIELDS) {
    if (!(field in patch)) continue;
    const value = patch[field];
    if (value === undefined) continue;
    if (field === 'backend') {
      if (value === null) delete out.backend;
      else out.backend = toBackend(value as BackendDto);
      continue;
    }
    const fallback = field === 'name' ? id : CONSTITUTION_DEFAULTS[field as keyof typeof CONSTITUTION_DEFAULTS];
    (out as unknown as Record<string, unknown>)[field] = value === null ? fallback : value;
  }
  out.rules = [...out.rules];
  out.capabilities = [...new Set(out.capabilities)];
  return out;
}

/** Tool grants (`/…` entries, `/mcp:<server>` as `/mcp`); empty means every tool is allowed. */
export function toolGrants(c: Constitution): string[] {
  return [...new Set(c.capabilities.filter((cap) => cap.startsWith('/')).map(grantTool))];
}

/**
 * The MCP servers an agent may use: the `/mcp:<server>` entries of its
 * capabilities, or null (every configured server) when it has none.
 */
export function mcpServerGrants(c: Constitution): string[] | null {
  const servers = c.capabilities.filter((cap) => cap.startsWith('/mcp:')).map((cap) => cap.slice('/mcp:'.length));
  return servers.length ? servers : null;
}

/** Descriptive skills (entries without a leading `/`). They never restrict tools. */
export function descriptiveSkills(c: Constitution): string[] {
  return c.capabilities.filter((cap) => !cap.startsWith('/'));
}
