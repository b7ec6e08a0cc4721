import { IsObject, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const present = (_: object, v: unknown): boolean => v !== null && v !== undefined;

/**
 * A tenant's remote A2A agent, with the fields of an `a2a_agents.json` entry (`url`, `card_url`, `auth`) and its
 * name; `auth` is one of the outbound credentials, its secrets inline (no `*_env`, no `*_file`), sealed at rest.
 */
export class RemoteAgentDto {
  /** The name `/a2a call <name>` uses; it shadows the operator's shared entry of that name for this tenant. */
  @IsString()
  @Matches(NAME, { message: 'name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}' })
  name: string;

  /** The remote's JSON-RPC endpoint; its card is at `<url>/agent-card.json` (or the origin's well-known card). */
  @IsString()
  @MaxLength(2048)
  url: string;

  /** Where the card is when it is elsewhere. */
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  card_url?: string;

  /**
   * How Arbiter authenticates to it: `{"type": "bearer", "token": …}`, `header`, `oauth2_client_credentials`,
   * `mtls` or `token_exchange`, as in `a2a_agents.json` (docs/agents-and-tools.md).
   */
  @IsOptional()
  @IsObject()
  auth?: Record<string, unknown>;
}

/** The fields to change: those given replace the stored ones, `null` removes one; `auth` is replaced whole. */
export class RemoteAgentPatchDto {
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ValidateIf(present)
  @IsString()
  @MaxLength(2048)
  card_url?: string | null;

  @ValidateIf(present)
  @IsObject()
  auth?: Record<string, unknown> | null;
}
