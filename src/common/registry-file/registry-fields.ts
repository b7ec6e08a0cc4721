import { jsonSyntaxProblem, parseJsonText } from '../json-guard.js';

/**
 * The field rules registry files share (`a2a_agents.json`, `mcp_servers.json`): the top level, entry names,
 * URLs and `*_env` references to host environment variables. Each registry keeps its own schema
 * and calls these for the parts they have in common.
 */

/** A problem in a registry file, naming the bad field by its path. Safe to show: it never quotes a value. */
export class RegistryFileError extends Error {}

/** What a `*_env` field may name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The file's entries: `{ "<key>": { "<name>": { … } } }`, nothing else at the top level. */
export function readEntries(text: string, key: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parseJsonText(text);
  } catch (err) {
    // The parser's own message quotes the text around the fault, a secret perhaps: the problem names the place only.
    throw new RegistryFileError(jsonSyntaxProblem(err));
  }
  if (!isObject(doc)) throw new RegistryFileError(`the top level must be an object with "${key}"`);
  for (const k of Object.keys(doc)) if (k !== key) throw new RegistryFileError(`unknown field "${k}"`);
  const entries = doc[key];
  if (!isObject(entries)) throw new RegistryFileError(`"${key}" is required and must be an object`);
  return entries;
}

/** One entry: its name matches `pattern` and its value is an object. */
export function readEntry(name: string, value: unknown, at: string, pattern: RegExp): Record<string, unknown> {
  if (!pattern.test(name)) {
    throw new RegistryFileError(`${at}: a name must match ${pattern.source.replace(/^\^|\$$/g, '')}`);
  }
  if (!isObject(value)) throw new RegistryFileError(`${at} must be an object`);
  return value;
}

/** An absolute http(s) URL without credentials. */
export function httpUrl(value: unknown, at: string): URL {
  if (typeof value !== 'string') {
    throw new RegistryFileError(`${at} ${value === undefined ? 'is required and ' : ''}must be a string`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RegistryFileError(`${at} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RegistryFileError(`${at} must be an absolute http(s) URL`);
  }
  if (url.username || url.password) throw new RegistryFileError(`${at} must not carry credentials; use auth`);
  return url;
}

/**
 * Resolves `*_env` references (a key → the host variable that holds its value). An unset or empty variable is
 * listed in `missing` (key, variable), never guessed: the registry says what that entry cannot do.
 */
export function resolveEnvRefs(
  refs: Record<string, string>,
  env: NodeJS.ProcessEnv,
): { values: Record<string, string>; missing: [key: string, variable: string][] } {
  const values: Record<string, string> = {};
  const missing: [string, string][] = [];
  for (const [key, variable] of Object.entries(refs)) {
    const value = env[variable];
    if (value) values[key] = value;
    else missing.push([key, variable]);
  }
  return { values, missing };
}

const TENANT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An entry's optional `tenants` list: the ids of the tenants that see it (absent: every tenant, as before the
 * list existed). An empty list hides the entry from everyone, which is a way to keep it without using it.
 */
export function readTenantList(v: unknown, at: string): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length > 10_000 || !v.every((t) => typeof t === 'string' && TENANT_ID.test(t))) {
    throw new RegistryFileError(`${at} must be a list of tenant ids (UUIDs)`);
  }
  return [...new Set((v as string[]).map((t) => t.toLowerCase()))];
}

/** Whether an operator's entry (with its optional `tenants` list) is visible to a tenant. */
export const visibleTo = (entry: { tenants?: readonly string[] }, tenantId: string): boolean =>
  !entry.tenants || entry.tenants.includes(tenantId.toLowerCase());
