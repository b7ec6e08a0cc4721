import { readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { MCP_SERVER_NAME } from '../registry/tools.js';
import { jsonSyntaxProblem, parseJsonText } from '../common/json-guard.js';

interface Common {
  name: string;
  /** One line for the roster and `/mcp list` (optional `description` field). */
  description: string;
  /** Environment variables named by `*_env` fields that are not set: the server is not usable. */
  missingEnv: string[];
  /** Everything that identifies the connection: a registry edit that changes it makes a new one. */
  fingerprint: string;
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
}

export type McpServerConfig = StdioServer | HttpServer;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const HEADER_VALUE = /^[\x20-\x7e\t]{0,8192}$/;
const STDIO_FIELDS = ['type', 'command', 'args', 'env', 'env_env', 'cwd', 'description', 'disabled'];
const HTTP_FIELDS = ['type', 'url', 'headers', 'headers_env', 'auth', 'description', 'disabled'];

export class McpRegistryError extends Error {}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A `{ "KEY": "string" }` map whose keys match `key`; `McpRegistryError` naming `at` otherwise. */
function stringMap(v: unknown, at: string, key: RegExp, value: RegExp, what: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isObj(v)) throw new McpRegistryError(`${at} must be an object`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (!key.test(k)) throw new McpRegistryError(`${at}: "${k}" is not a valid ${what}`);
    if (typeof val !== 'string' || !value.test(val)) {
      throw new McpRegistryError(
        `${at}.${k} must be a string${value === ENV_NAME ? ' naming an environment variable' : ' of printable characters'}`,
      );
    }
    out[k] = val;
  }
  return out;
}

/** Resolves a `*_env` map (target name → host variable), collecting the unset ones. */
function fromEnv(
  refs: Record<string, string>,
  env: NodeJS.ProcessEnv,
  at: string,
  missing: string[],
  warnings: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, variable] of Object.entries(refs)) {
    const value = env[variable];
    if (value) out[k] = value;
    else {
      missing.push(variable);
      warnings.push(`${at}.${k}: environment variable ${variable} is not set; the server cannot be used`);
    }
  }
  return out;
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
  let doc: unknown;
  try {
    doc = parseJsonText(text);
  } catch (err) {
    throw new McpRegistryError(jsonSyntaxProblem(err));
  }
  if (!isObj(doc)) throw new McpRegistryError('the top level must be an object with "mcpServers"');
  for (const k of Object.keys(doc)) if (k !== 'mcpServers') throw new McpRegistryError(`unknown field "${k}"`);
  if (!isObj(doc.mcpServers)) throw new McpRegistryError('"mcpServers" is required and must be an object');
  const servers = new Map<string, McpServerConfig>();
  const warnings: string[] = [];
  for (const [name, entry] of Object.entries(doc.mcpServers)) {
    const at = `mcpServers.${name}`;
    if (!MCP_SERVER_NAME.test(name)) {
      throw new McpRegistryError(`${at}: a name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}`);
    }
    if (!isObj(entry)) throw new McpRegistryError(`${at} must be an object`);
    const type = entry.type;
    if (type !== undefined && typeof type !== 'string') throw new McpRegistryError(`${at}.type must be a string`);
    if (type === 'sse') {
      throw new McpRegistryError(`${at}.type: the deprecated SSE transport is not supported; use streamable HTTP`);
    }
    const http =
      type === undefined ? entry.url !== undefined : ['http', 'streamable-http', 'streamableHttp'].includes(type);
    if (type !== undefined && !http && type !== 'stdio') {
      throw new McpRegistryError(`${at}.type must be "stdio" or "http"`);
    }
    for (const k of Object.keys(entry)) {
      if (!(http ? HTTP_FIELDS : STDIO_FIELDS).includes(k)) {
        throw new McpRegistryError(`${at}: unknown field "${k}" for a ${http ? 'streamable HTTP' : 'stdio'} server`);
      }
    }
    if (entry.disabled !== undefined && typeof entry.disabled !== 'boolean') {
      throw new McpRegistryError(`${at}.disabled must be true or false`);
    }
    if (entry.description !== undefined && (typeof entry.description !== 'string' || entry.description.length > 500)) {
      throw new McpRegistryError(`${at}.description must be a string of at most 500 characters`);
    }
    const description = typeof entry.description === 'string' ? entry.description.replace(/\s+/g, ' ').trim() : '';
    const missing: string[] = [];
    let server: McpServerConfig;
    if (http) {
      server = {
        name,
        description,
        missingEnv: missing,
        fingerprint: '',
        transport: 'http',
        ...httpEntry(entry, at, env, missing, warnings),
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
    server.fingerprint = JSON.stringify(server);
    if (entry.disabled === true) continue;
    servers.set(name, server);
  }
  return { servers, warnings };
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
    throw new McpRegistryError(
      `${at}.command is required and must be a non-empty string (or give "url" for an HTTP server)`,
    );
  }
  const args = entry.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' && !a.includes('\0')) || args.length > 256) {
    throw new McpRegistryError(`${at}.args must be an array of strings`);
  }
  const literal = stringMap(entry.env, `${at}.env`, ENV_NAME, /^[^\0]{0,32768}$/, 'environment variable name');
  const refs = stringMap(entry.env_env, `${at}.env_env`, ENV_NAME, ENV_NAME, 'environment variable name');
  let cwd: string | undefined;
  if (entry.cwd !== undefined) {
    if (typeof entry.cwd !== 'string' || !entry.cwd || entry.cwd.includes('\0')) {
      throw new McpRegistryError(`${at}.cwd must be a directory path`);
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
  missing: string[],
  warnings: string[],
): Pick<HttpServer, 'url' | 'headers'> {
  if (typeof entry.url !== 'string') throw new McpRegistryError(`${at}.url is required and must be a string`);
  let url: URL;
  try {
    url = new URL(entry.url);
  } catch {
    throw new McpRegistryError(`${at}.url must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpRegistryError(`${at}.url must be an absolute http(s) URL`);
  }
  if (url.username || url.password) throw new McpRegistryError(`${at}.url must not carry credentials; use auth`);
  const headers = stringMap(entry.headers, `${at}.headers`, HEADER_NAME, HEADER_VALUE, 'header name');
  const refs = stringMap(entry.headers_env, `${at}.headers_env`, HEADER_NAME, ENV_NAME, 'header name');
  Object.assign(headers, fromEnv(refs, env, `${at}.headers_env`, missing, warnings));
  if (entry.auth !== undefined) {
    const auth = entry.auth;
    if (!isObj(auth)) throw new McpRegistryError(`${at}.auth must be an object`);
    for (const k of Object.keys(auth)) {
      if (!['type', 'token', 'token_env'].includes(k)) throw new McpRegistryError(`${at}.auth: unknown field "${k}"`);
    }
    if (auth.type !== undefined && auth.type !== 'bearer') {
      throw new McpRegistryError(`${at}.auth.type must be "bearer" (the only supported type)`);
    }
    if ((auth.token === undefined) === (auth.token_env === undefined)) {
      throw new McpRegistryError(`${at}.auth: give token or token_env (one of them)`);
    }
    if (auth.token !== undefined) {
      if (typeof auth.token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(auth.token)) {
        throw new McpRegistryError(`${at}.auth.token must be printable ASCII without spaces`);
      }
      headers.authorization = `Bearer ${auth.token}`;
    } else {
      if (typeof auth.token_env !== 'string' || !ENV_NAME.test(auth.token_env)) {
        throw new McpRegistryError(`${at}.auth.token_env must be an environment variable name`);
      }
      const token = fromEnv({ authorization: auth.token_env }, env, `${at}.auth`, missing, warnings).authorization;
      if (token) headers.authorization = `Bearer ${token}`;
    }
  }
  return { url: url.href, headers };
}

/**
 * The MCP server registry file (`ARBITER_HOME/mcp_servers.json` by
 * default, `ARBITER_MCP_SERVERS_FILE`), loaded like `a2a_agents.json`:
 * missing → no servers; changes picked up without a restart (checked on
 * use and every 2 s); a malformed file is logged with the bad field and the
 * last good registry stays in force.
 */
@Injectable()
export class McpRegistry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('McpRegistry');
  private servers = new Map<string, McpServerConfig>();
  private stamp = '';
  private timer: NodeJS.Timeout | undefined;
  /** The last load problem, for operators (`null` when the file loaded). */
  lastError: string | null = null;

  constructor(private readonly config: AppConfig) {}

  onModuleInit(): void {
    this.refresh();
    this.timer = setInterval(() => this.refresh(), 2_000);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  get path(): string {
    return this.config.mcpRegistryPath;
  }

  list(): McpServerConfig[] {
    this.refresh();
    return [...this.servers.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): McpServerConfig | undefined {
    this.refresh();
    return this.servers.get(name);
  }

  /** Re-reads the file if it changed (one `stat` per use). */
  refresh(): void {
    let stamp: string;
    try {
      const st = statSync(this.path);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.fail(`cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`, 'stat');
        return;
      }
      if (this.stamp !== 'missing') {
        if (this.servers.size > 0) this.logger.log(`${this.path} is gone: no MCP servers configured`);
        this.servers = new Map();
        this.stamp = 'missing';
        this.lastError = null;
      }
      return;
    }
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    try {
      const { servers, warnings } = parseMcpRegistry(readFileSync(this.path, 'utf8'), process.env, dirname(this.path));
      for (const w of warnings) this.logger.warn(`${this.path}: ${w}`);
      this.servers = servers;
      this.lastError = null;
      this.logger.log(`loaded ${servers.size} MCP server(s) from ${this.path}`);
    } catch (err) {
      this.fail(err instanceof McpRegistryError ? err.message : 'cannot read it', stamp);
    }
  }

  private fail(problem: string, stamp: string): void {
    this.stamp = stamp;
    this.lastError = `${this.path}: ${problem}`;
    this.logger.error(
      `invalid MCP registry ${this.path}: ${problem}; keeping the previous registry (${this.servers.size} server(s))`,
    );
  }
}
