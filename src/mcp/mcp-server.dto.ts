import { IsIn, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const present = (_: object, v: unknown): boolean => v !== null && v !== undefined;
const TYPES = ['http', 'streamable-http', 'streamableHttp'];

/**
 * A tenant's MCP server: a streamable-HTTP entry of `mcp_servers.json` (`url`, `headers`, `auth`,
 * `description`) and its name. Header values and the credential's secrets are inline (no `*_env`, no
 * `*_file`) and sealed at rest; a tenant's server is never a command (stdio).
 */
export class McpServerDto {
  /** The name `/mcp call <name> …` uses; it shadows the operator's shared entry of that name for this tenant. */
  @IsString()
  @Matches(NAME, { message: 'name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}' })
  name: string;

  /** Streamable HTTP (the only transport a tenant's server has). */
  @IsOptional()
  @IsIn(TYPES)
  type?: string;

  /** The server's streamable-HTTP endpoint. */
  @IsString()
  @MaxLength(2048)
  url: string;

  /** One line for the roster and `/mcp list`. */
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  /** Headers sent on every request (their values are kept sealed and never shown). */
  @IsOptional()
  @IsObject()
  headers?: Record<string, string>;

  /** How Arbiter authenticates to it, as in `mcp_servers.json` (docs/agents-and-tools.md). */
  @IsOptional()
  @IsObject()
  auth?: Record<string, unknown>;
}

/** The fields to change: those given replace the stored ones, `null` removes one; `headers` and `auth` whole. */
export class McpServerPatchDto {
  @IsOptional()
  @IsIn(TYPES)
  type?: string;

  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ValidateIf(present)
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ValidateIf(present)
  @IsObject()
  headers?: Record<string, string> | null;

  @ValidateIf(present)
  @IsObject()
  auth?: Record<string, unknown> | null;
}
