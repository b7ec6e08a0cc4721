import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { validateSync } from 'class-validator';
import { plainToInstance } from 'class-transformer';
import { flattenValidationErrors, VALIDATOR_OPTIONS } from '../../common/validation.js';
import {
  AGENT_ID_PATTERN,
  applyConstitution,
  ConstitutionDto,
  MASTER_AGENT_ID,
  type Constitution,
} from '../constitution.js';
import { jsonSyntaxProblem, parseJsonText } from '../../common/json-guard.js';

export interface FileAgent {
  id: string;
  constitution: Constitution;
  file: string;
  updatedAt: Date;
}

export interface FileAgentProblem {
  file: string;
  problem: string;
}

const MAX_FILE_BYTES = 256 * 1024;

/**
 * Reads `<dir>/*.json`: the file name (without `.json`) is the agent id, the
 * content a constitution, or `{ "agent_def": { … } }`. Each bad file is
 * reported by name and skipped; the rest still load.
 */
export function loadFileAgents(dir: string): { agents: FileAgent[]; problems: FileAgentProblem[] } {
  const agents: FileAgent[] = [];
  const problems: FileAgentProblem[] = [];
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { agents, problems };
    return { agents, problems: [{ file: dir, problem: `cannot read directory: ${(err as Error).message}` }] };
  }
  for (const name of names) {
    const file = join(dir, name);
    const id = basename(name, '.json');
    try {
      if (!AGENT_ID_PATTERN.test(id))
        throw new Error('file name must be <id>.json with id matching [A-Za-z0-9_-]{1,64}');
      if (id === MASTER_AGENT_ID) throw new Error('"index" is the built-in master agent and cannot be redefined');
      const stat = statSync(file);
      if (!stat.isFile()) throw new Error('not a regular file');
      if (stat.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
      let parsed: unknown;
      try {
        parsed = parseJsonText(readFileSync(file, 'utf8'));
      } catch (err) {
        throw new Error(`invalid JSON: ${jsonSyntaxProblem(err)}`);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('must hold a JSON object');
      let body = parsed as Record<string, unknown>;
      if ('agent_def' in body) {
        const { agent_def: def, ...rest } = body;
        const extra = Object.keys(rest).filter((k) => k !== 'id');
        if (extra.length) throw new Error(`unknown field(s) beside agent_def: ${extra.join(', ')}`);
        if (rest.id !== undefined && rest.id !== id)
          throw new Error(`id ${JSON.stringify(rest.id)} does not match the file name`);
        if (def === null || typeof def !== 'object' || Array.isArray(def))
          throw new Error('agent_def must be a JSON object');
        body = def as Record<string, unknown>;
      } else if ('id' in body) {
        if (body.id !== id) throw new Error(`id ${JSON.stringify(body.id)} does not match the file name`);
        const { id: _ignored, ...rest } = body;
        body = rest;
      }
      const dto = plainToInstance(ConstitutionDto, body);
      const errors = validateSync(dto, VALIDATOR_OPTIONS);
      if (errors.length) {
        const fields = flattenValidationErrors(errors).map((f) => `${f.field}: ${f.messages.join('; ')}`);
        throw new Error(fields.join(' | '));
      }
      agents.push({ id, constitution: applyConstitution(id, {}, dto), file, updatedAt: stat.mtime });
    } catch (err) {
      problems.push({ file, problem: (err as Error).message });
    }
  }
  return { agents, problems };
}
