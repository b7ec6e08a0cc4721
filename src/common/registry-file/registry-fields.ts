import { jsonSyntaxProblem, parseJsonText } from '../json-guard.js';

/**
 * The field rules registry files share (`a2a_agents.json`, `mcp_servers.json`): the top level, entry names,
 * URLs, bearer auth and `*_env` references to host environment variables. Each registry keeps its own schema
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

/** A bearer token given inline, or the name of the host variable that holds it. */
export type BearerAuth = { token: string } | { tokenEnv: string } | Record<string, never>;

/**
 * `"auth": { "type": "bearer", "token": "…" }` or `{ "token_env": "VAR" }`. With `required`, exactly one of
 * them must be given; otherwise at most one (no token at all is allowed).
 */
export function readBearerAuth(auth: unknown, at: string, required: boolean): BearerAuth {
  if (!isObject(auth)) throw new RegistryFileError(`${at} must be an object`);
  for (const k of Object.keys(auth)) {
    if (!['type', 'token', 'token_env'].includes(k)) throw new RegistryFileError(`${at}: unknown field "${k}"`);
  }
  if (auth.type !== undefined && auth.type !== 'bearer') {
    throw new RegistryFileError(`${at}.type must be "bearer" (the only supported type)`);
  }
  const given = (auth.token !== undefined ? 1 : 0) + (auth.token_env !== undefined ? 1 : 0);
  if (required && given !== 1) throw new RegistryFileError(`${at}: give token or token_env (one of them)`);
  if (given === 2) throw new RegistryFileError(`${at}: give token or token_env, not both`);
  if (auth.token !== undefined) {
    if (typeof auth.token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(auth.token)) {
      throw new RegistryFileError(`${at}.token must be printable ASCII without spaces`);
    }
    return { token: auth.token };
  }
  if (auth.token_env !== undefined) {
    if (typeof auth.token_env !== 'string' || !ENV_NAME.test(auth.token_env)) {
      throw new RegistryFileError(`${at}.token_env must be an environment variable name`);
    }
    return { tokenEnv: auth.token_env };
  }
  return {};
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
