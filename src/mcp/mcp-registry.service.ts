import { dirname, isAbsolute, resolve } from 'node:path';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { MCP_SERVER_NAME } from '../registry/tools.js';
import { RegistryFile, type RegistryContent } from '../common/registry-file/registry-file.js';
import {
  ENV_NAME,
  httpUrl,
  isObject,
  readEntries,
  readEntry,
  readTenantList,
  RegistryFileError,
  resolveEnvRefs,
} from '../common/registry-file/registry-fields.js';
import { checkAuthUrl, readOutboundAuth } from '../outbound-auth/auth-fields.js';
import type { OutboundAuth } from '../outbound-auth/outbound-auth.types.js';
import { secretsOf } from '../outbound-auth/credentials.js';
import { RESERVED_KEYS } from '../common/validation.js';

interface Common {
  name: string;
  /** One line for the roster and `/mcp list` (optional `description` field). */
  description: string;
  /** Environment variables named by `*_env` fields that are not set: the server is not usable. */
  missingEnv: string[];
  /** Everything that identifies the connection: a registry edit that changes it makes a new one. */
  fingerprint: string;
  /** An operator's entry: the tenants that see it (`tenants`; absent: every tenant). */
  tenants?: string[];
  /** A tenant's own entry (`/v1/mcp-servers`): that tenant's id. */
  owner?: string;
}

/** A server Arbiter starts as a child process and talks to over stdin/stdout. */
export interface StdioServer extends Common {
  transport: 'stdio';
  command: string;
  args: string[];
  /** The child's environment on top of the SDK's safe defaults (HOME, PATH, …); never Arbiter's own. */
  env: Record<string, string>;
  cwd?: string;
}

/** A server reached over streamable HTTP, through the egress guard. */
export interface HttpServer extends Common {
  transport: 'http';
  url: string;
  /** Headers sent on every request (secrets included: never shown). */
  headers: Record<string, string>;
  /** How Arbiter authenticates to it (`auth`; none when absent). */
  auth: OutboundAuth;
}

export type McpServerConfig = StdioServer | HttpServer;

/** Names of a child's environment variables that hold secrets by their look (`…_API_KEY`, `TOKEN`, `PASSWORD` …). */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION/i;

/**
 * The secrets of a server's entry, to take out of what it says in a failure: its credential and header values,
 * or the values of a stdio server's environment variables named like secrets.
 */
export function serverSecrets(server: McpServerConfig): string[] {
  if (server.transport === 'http') return [...secretsOf(server.auth), ...Object.values(server.headers)];
  return Object.entries(server.env)
    .filter(([k]) => SECRET_NAME.test(k))
    .map(([, v]) => v);
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const HEADER_VALUE = /^[\x20-\x7e\t]{0,8192}$/;
const STDIO_FIELDS = ['type', 'command', 'args', 'env', 'env_env', 'cwd', 'description', 'disabled', 'tenants'];
const HTTP_FIELDS = ['type', 'url', 'headers', 'headers_env', 'auth', 'description', 'disabled', 'tenants'];
/** A tenant's own server: streamable HTTP only (a tenant never starts a process here), no host variables. */
const TENANT_FIELDS = ['type', 'url', 'headers', 'auth', 'description'];

/** A problem in `mcp_servers.json`, naming the bad field. */
export { RegistryFileError as McpRegistryError };

/** A `{ "KEY": "string" }` map whose keys match `key`; `RegistryFileError` naming `at` otherwise. */
function stringMap(v: unknown, at: string, key: RegExp, value: RegExp, what: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isObject(v)) throw new RegistryFileError(`${at} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (!key.test(k)) throw new RegistryFileError(`${at}: "${k}" is not a valid ${what}`);
    // As in the API's bodies: `__proto__` would set the map's prototype rather than a key, and the entry vanish.
    if (RESERVED_KEYS.has(k)) throw new RegistryFileError(`${at}: "${k}" may not be a key here`);
    if (typeof val !== 'string' || !value.test(val)) {
      throw new RegistryFileError(
        `${at}.${k} must be a string${value === ENV_NAME ? ' naming an environment variable' : ' of printable characters'}`,
      );
    }
    out[k] = val;
  }
  return out;
}

/** Resolves a `*_env` map (target name → host variable), collecting the unset ones: the server cannot be used. */
function fromEnv(
  refs: Record<string, string>,
  env: NodeJS.ProcessEnv,
  at: string,
  missing: string[],
  warnings: string[],
): Record<string, string> {
  const resolved = resolveEnvRefs(refs, env);
  for (const [k, variable] of resolved.missing) {
    missing.push(variable);
    warnings.push(`${at}.${k}: environment variable ${variable} is not set; the server cannot be used`);
  }
  return resolved.values;
}

/**
 * Parses and validates `mcp_servers.json`, in the shape Claude Desktop,
 * Cursor and VS Code use: `{ "mcpServers": { "<name>": { "command", "args",
 * "env", "cwd" } | { "url", "headers" } } }`. Secrets stay out of the file
 * through `*_env` fields that name host environment variables: `env_env`
 * (child variable → host variable), `headers_env` (header → host variable),
 * `auth.token_env`. The first problem is reported with the path of the bad field.
 */
export function parseMcpRegistry(
  text: string,
  env: NodeJS.ProcessEnv,
  baseDir: string,
): { servers: Map<string, McpServerConfig>; warnings: string[] } {
  const servers = new Map<string, McpServerConfig>();
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(readEntries(text, 'mcpServers'))) {
    const at = `mcpServers.${name}`;
    const entry = readEntry(name, value, at, MCP_SERVER_NAME);
    const type = entry.type;
    if (type !== undefined && typeof type !== 'string') throw new RegistryFileError(`${at}.type must be a string`);
    if (type === 'sse') {
      throw new RegistryFileError(`${at}.type: the deprecated SSE transport is not supported; use streamable HTTP`);
    }
    const http =
      type === undefined ? entry.url !== undefined : ['http', 'streamable-http', 'streamableHttp'].includes(type);
    if (type !== undefined && !http && type !== 'stdio') {
      throw new RegistryFileError(`${at}.type must be "stdio" or "http"`);
    }
    for (const k of Object.keys(entry)) {
      if (!(http ? HTTP_FIELDS : STDIO_FIELDS).includes(k)) {
        throw new RegistryFileError(`${at}: unknown field "${k}" for a ${http ? 'streamable HTTP' : 'stdio'} server`);
      }
    }
    if (entry.disabled !== undefined && typeof entry.disabled !== 'boolean') {
      throw new RegistryFileError(`${at}.disabled must be true or false`);
    }
    const description = descriptionOf(entry, at);
    const tenants = readTenantList(entry.tenants, `${at}.tenants`);
    const missing: string[] = [];
    let server: McpServerConfig;
    if (http) {
      server = {
        name,
        description,
        missingEnv: missing,
        fingerprint: '',
        transport: 'http',
        ...httpEntry(entry, at, env, baseDir, missing, warnings),
      };
    } else {
      server = {
        name,
        description,
        missingEnv: missing,
        fingerprint: '',
        transport: 'stdio',
        ...stdioEntry(entry, at, env, baseDir, missing, warnings),
      };
    }
    if (tenants) server.tenants = tenants;
    server.fingerprint = JSON.stringify(server);
    if (entry.disabled === true) continue;
    servers.set(name, server);
  }
  return { servers, warnings };
}

function descriptionOf(entry: Record<string, unknown>, at: string): string {
  if (entry.description !== undefined && (typeof entry.description !== 'string' || entry.description.length > 500)) {
    throw new RegistryFileError(`${at}.description must be a string of at most 500 characters`);
  }
  return typeof entry.description === 'string' ? entry.description.replace(/\s+/g, ' ').trim() : '';
}

/**
 * A tenant's own server (`/v1/mcp-servers`), validated as a file's streamable-HTTP entry is, without what only the
 * operator may name: a command to start, host variables (`headers_env`, `*_env`), files (`*_file`).
 */
export function readTenantMcpEntry(
  name: string,
  entry: Record<string, unknown>,
  at: string,
  owner: string,
): HttpServer {
  if (entry.type !== undefined && !['http', 'streamable-http', 'streamableHttp'].includes(entry.type as string)) {
    throw new RegistryFileError(`${at}.type must be "http": a tenant's MCP servers are reached over streamable HTTP`);
  }
  for (const k of Object.keys(entry)) {
    if (!TENANT_FIELDS.includes(k)) {
      throw new RegistryFileError(`${at}: unknown field "${k}" for a tenant's MCP server (streamable HTTP only)`);
    }
  }
  const description = descriptionOf(entry, at);
  const server: HttpServer = {
    name,
    description,
    missingEnv: [],
    fingerprint: '',
    transport: 'http',
    ...httpEntry(entry, at, {}, undefined, [], []),
    owner,
  };
  server.fingerprint = JSON.stringify(server);
  return server;
}

function stdioEntry(
  entry: Record<string, unknown>,
  at: string,
  env: NodeJS.ProcessEnv,
  baseDir: string,
  missing: string[],
  warnings: string[],
): Pick<StdioServer, 'command' | 'args' | 'env' | 'cwd'> {
  if (typeof entry.command !== 'string' || !entry.command.trim() || entry.command.includes('\0')) {
    throw new RegistryFileError(
      `${at}.command is required and must be a non-empty string (or give "url" for an HTTP server)`,
    );
  }
  const args = entry.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' && !a.includes('\0')) || args.length > 256) {
    throw new RegistryFileError(`${at}.args must be an array of strings`);
  }
  const literal = stringMap(entry.env, `${at}.env`, ENV_NAME, /^[^\0]{0,32768}$/, 'environment variable name');
  const refs = stringMap(entry.env_env, `${at}.env_env`, ENV_NAME, ENV_NAME, 'environment variable name');
  let cwd: string | undefined;
  if (entry.cwd !== undefined) {
    if (typeof entry.cwd !== 'string' || !entry.cwd || entry.cwd.includes('\0')) {
      throw new RegistryFileError(`${at}.cwd must be a directory path`);
    }
    cwd = isAbsolute(entry.cwd) ? entry.cwd : resolve(baseDir, entry.cwd);
  }
  return {
    command: entry.command,
    args: args as string[],
    env: { ...literal, ...fromEnv(refs, env, `${at}.env_env`, missing, warnings) },
    ...(cwd ? { cwd } : {}),
  };
}

function httpEntry(
  entry: Record<string, unknown>,
  at: string,
  env: NodeJS.ProcessEnv,
  baseDir: string | undefined,
  missing: string[],
  warnings: string[],
): Pick<HttpServer, 'url' | 'headers' | 'auth'> {
  // Always "is required" here: the entry is an HTTP server because of its type, whatever its url.
  if (typeof entry.url !== 'string') throw new RegistryFileError(`${at}.url is required and must be a string`);
  const url = httpUrl(entry.url, `${at}.url`);
  const headers = stringMap(entry.headers, `${at}.headers`, HEADER_NAME, HEADER_VALUE, 'header name');
  const refs = stringMap(entry.headers_env, `${at}.headers_env`, HEADER_NAME, ENV_NAME, 'header name');
  Object.assign(headers, fromEnv(refs, env, `${at}.headers_env`, missing, warnings));
  let auth: OutboundAuth = { type: 'none' };
  if (entry.auth !== undefined) {
    // A tenant's entry (no base directory) names no host variables and no files.
    const parsed = readOutboundAuth(entry.auth, `${at}.auth`, baseDir === undefined ? {} : { env, baseDir });
    auth = parsed.auth;
    checkAuthUrl(auth, url, at);
    for (const variable of parsed.missingEnv) {
      missing.push(variable);
      warnings.push(`${at}.auth: environment variable ${variable} is not set; the server cannot be used`);
    }
  }
  return { url: url.href, headers, auth };
}

/**
 * The MCP server registry file (`ARBITER_HOME/mcp_servers.json` by
 * default, `ARBITER_MCP_SERVERS_FILE`), kept loaded by `RegistryFile` like
 * `a2a_agents.json`: missing → no servers; edits picked up without a
 * restart; a malformed file is logged with the bad field and the last good
 * registry stays in force.
 */
@Injectable()
export class McpRegistry extends RegistryFile<McpServerConfig> {
  constructor(config: AppConfig) {
    super(
      {
        logger: 'McpRegistry',
        registry: 'MCP registry',
        entries: 'MCP server',
        entry: 'server',
        none: 'no MCP servers configured',
      },
      () => config.mcpRegistryPath,
    );
  }

  protected parse(text: string, env: NodeJS.ProcessEnv, path: string): RegistryContent<McpServerConfig> {
    const { servers, warnings } = parseMcpRegistry(text, env, dirname(path));
    return { entries: servers, warnings };
  }
}
