import { DomainError, type FieldError } from '../../common/errors.js';
import { validateAs } from '../../common/validation.js';
import {
  AGENT_ID_PATTERN,
  CONSTITUTION_DEFAULTS,
  CONSTITUTION_FIELDS,
  ConstitutionDto,
  MASTER_AGENT_ID,
  type Constitution,
} from '../constitution.js';
import type { AgentEntity } from '../entities/agent.entity.js';
import type { FileAgent } from './file-agents.loader.js';

/**
 * Agents as the rest of the system sees them (`ResolvedAgent`, whatever
 * their source), as the API shows them (`AgentView`), and the request
 * bodies that create and change them, checked.
 */

export type AgentSource = 'builtin' | 'file' | 'stored' | 'inline';

/** The id a request's own `agent_def` runs under: never a catalog id (no agent id can contain `~`). */
export const INLINE_AGENT_ID = '~inline';

/** An agent as the rest of the system sees it, whatever its source. */
export interface ResolvedAgent {
  id: string;
  source: AgentSource;
  constitution: Constitution;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export interface AgentView {
  id: string;
  source: AgentSource;
  agent_def: Constitution;
  created_at: string | null;
  updated_at: string | null;
}

export const MASTER_CONSTITUTION: Constitution = {
  ...CONSTITUTION_DEFAULTS,
  name: 'index',
  role: 'master orchestrator',
  goal: 'Answer directly when you can; otherwise delegate each part of the request to the agent best suited to it and combine the results.',
};

export const MASTER: ResolvedAgent = {
  id: MASTER_AGENT_ID,
  source: 'builtin',
  constitution: MASTER_CONSTITUTION,
  createdAt: null,
  updatedAt: null,
};

/** The constitution with its fields in their documented order (jsonb does not keep key order). */
function ordered(c: Constitution): Constitution {
  return Object.fromEntries(
    CONSTITUTION_FIELDS.flatMap((f) => (c[f] === undefined ? [] : [[f, c[f]]])),
  ) as unknown as Constitution;
}

export function agentView(a: ResolvedAgent): AgentView {
  return {
    id: a.id,
    source: a.source,
    agent_def: ordered(a.constitution),
    created_at: a.createdAt?.toISOString() ?? null,
    updated_at: a.updatedAt?.toISOString() ?? null,
  };
}

export function fromRow(row: AgentEntity): ResolvedAgent {
  return {
    id: row.id,
    source: 'stored',
    constitution: row.constitution,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function fromFile(f: FileAgent): ResolvedAgent {
  return { id: f.id, source: 'file', constitution: f.constitution, createdAt: null, updatedAt: f.updatedAt };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Splits a request body into `id` and constitution fields. The body is either
 * a constitution with an `id`, or `{ id, agent_def: { … } }`.
 */
export function splitBody(body: unknown): { id: unknown; def: unknown; prefix: string } {
  if (!isPlainObject(body)) {
    throw DomainError.validation([{ field: 'body', messages: ['must be a JSON object'] }]);
  }
  if ('agent_def' in body) {
    const { id, agent_def: def, ...rest } = body;
    const extra = Object.keys(rest);
    if (extra.length) {
      throw DomainError.validation(
        extra.map((f) => ({ field: f, messages: [`${f} should not exist beside agent_def`] })),
      );
    }
    if (def === null || typeof def !== 'object' || Array.isArray(def)) {
      throw DomainError.validation([{ field: 'agent_def', messages: ['agent_def must be a JSON object'] }]);
    }
    return { id, def, prefix: 'agent_def' };
  }
  const { id, ...def } = body;
  return { id, def, prefix: '' };
}

export function idErrors(id: unknown): FieldError[] {
  if (typeof id !== 'string') return [{ field: 'id', messages: ['id is required and must be a string'] }];
  if (!AGENT_ID_PATTERN.test(id)) return [{ field: 'id', messages: ['id must match [A-Za-z0-9_-]{1,64}'] }];
  return [];
}

/** Validates the constitution part; one failure names every failing field, `earlier` ones included. */
export async function validateDef(def: unknown, prefix: string, earlier: FieldError[]): Promise<ConstitutionDto> {
  const problems = [...earlier];
  let unlisted = 0;
  let dto: ConstitutionDto | undefined;
  try {
    dto = await validateAs(ConstitutionDto, def, prefix);
  } catch (err) {
    if (!(err instanceof DomainError && err.code === 'validation_failed')) throw err;
    problems.push(...(err.details ?? []));
    unlisted = err.unlisted;
  }
  if (problems.length || !dto) throw DomainError.validation(problems, undefined, unlisted);
  return dto;
}
