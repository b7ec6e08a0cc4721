import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { TENANT_SCOPES } from '../../common/auth.decorators.js';
import { OmittableNotNull } from '../../common/validation.js';
import { ASYMMETRIC_ALGORITHMS } from './trusted-issuer.js';

const HTTP_URL = /^https?:\/\/[^\s?#]+$/;
const CLAIM = /^[A-Za-z0-9_.:/-]{1,128}$/;
const CLAIM_MESSAGE = 'must be a claim name (letters, digits, _ . : / -; at most 128)';
const ALGORITHMS_MESSAGE = `algorithms must be a non-empty list of ${ASYMMETRIC_ALGORITHMS.join(', ')} (none and HMAC are never accepted)`;

/**
 * A trusted issuer as the admin API takes it. On `PATCH` every field is
 * optional (`IssuerPatchDto`); on `POST` `issuer` and `audiences` are
 * required and a tenant mapping (`tenant_claim` or `tenant_id`) or a
 * `role_claim` must be given.
 */
export class IssuerPatchDto {
  /** The exact `iss` of its tokens; its discovery document is `<issuer>/.well-known/openid-configuration`. */
  @OmittableNotNull()
  @IsString()
  @MaxLength(512)
  @Matches(HTTP_URL, { message: 'issuer must be an http(s) URL without query or fragment' })
  issuer?: string;

  @OmittableNotNull()
  @IsArray({ message: 'audiences must be a non-empty list of strings' })
  @ArrayNotEmpty({ message: 'audiences must be a non-empty list of strings' })
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(512, { each: true })
  audiences?: string[];

  @OmittableNotNull()
  @IsArray({ message: ALGORITHMS_MESSAGE })
  @ArrayNotEmpty({ message: ALGORITHMS_MESSAGE })
  @ArrayMaxSize(ASYMMETRIC_ALGORITHMS.length, { message: ALGORITHMS_MESSAGE })
  @IsIn(ASYMMETRIC_ALGORITHMS, { each: true, message: ALGORITHMS_MESSAGE })
  algorithms?: string[];

  @OmittableNotNull()
  @IsInt()
  @Min(0)
  @Max(600)
  clock_skew_seconds?: number;

  /** Where its keys are; default: the discovery document's `jwks_uri`. */
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsString()
  @MaxLength(1024)
  @Matches(HTTP_URL, { message: 'jwks_uri must be an http(s) URL without query or fragment' })
  jwks_uri?: string | null;

  /** A claim whose value is a tenant's `external_id`. */
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @Matches(CLAIM, { message: `tenant_claim ${CLAIM_MESSAGE}` })
  tenant_claim?: string | null;

  /** The one tenant every token of this issuer acts for (an organisation with its own IdP). */
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsUUID('all', { message: 'tenant_id must be a tenant id (a UUID)' })
  tenant_id?: string | null;

  /** The claim (`roles`, `groups`, `scope` …) whose values `arbiter:admin` / `arbiter:auditor` make an operator. */
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @Matches(CLAIM, { message: `role_claim ${CLAIM_MESSAGE}` })
  role_claim?: string | null;

  /** Their scope values → Arbiter scopes, e.g. `{"agent.call": ["a2a:invoke"]}`. */
  @OmittableNotNull()
  @IsObject({ message: 'scope_map must be an object of scope → list of Arbiter scopes' })
  scope_map?: Record<string, string[]>;
}

export class IssuerDto extends IssuerPatchDto {
  declare issuer: string;
  declare audiences: string[];
}

/** Checks what class-validator cannot say per field: required fields, the mapping, and the scope map's shape. */
export function issuerProblems(dto: IssuerPatchDto, creating: boolean): { field: string; messages: string[] }[] {
  const problems: { field: string; messages: string[] }[] = [];
  if (creating && !dto.issuer) problems.push({ field: 'issuer', messages: ['issuer is required'] });
  if (creating && !dto.audiences) problems.push({ field: 'audiences', messages: ['audiences is required'] });
  if (dto.tenant_claim && dto.tenant_id) {
    problems.push({ field: 'tenant_id', messages: ['give tenant_claim or tenant_id, not both'] });
  }
  if (dto.tenant_id && dto.role_claim) {
    // An organisation's own IdP acts for its tenant only: it may never make platform operators.
    problems.push({
      field: 'role_claim',
      messages: ['an issuer bound to one tenant (tenant_id) cannot grant operator roles; leave role_claim out'],
    });
  }
  if (creating && !dto.tenant_claim && !dto.tenant_id && !dto.role_claim) {
    problems.push({
      field: 'tenant_claim',
      messages: ['give tenant_claim or tenant_id (tenant callers), role_claim (operators), or both'],
    });
  }
  const map = dto.scope_map;
  if (map) {
    const entries = Object.entries(map);
    const bad = entries.find(
      ([k, v]) =>
        k.length === 0 ||
        k.length > 256 ||
        !Array.isArray(v) ||
        v.length > TENANT_SCOPES.length ||
        v.some((s) => typeof s !== 'string' || !(TENANT_SCOPES as readonly string[]).includes(s)),
    );
    if (entries.length > 100 || bad) {
      problems.push({
        field: 'scope_map',
        messages: [`scope_map values must be lists of ${TENANT_SCOPES.join(', ')} (at most 100 entries)`],
      });
    }
  }
  return problems;
}
