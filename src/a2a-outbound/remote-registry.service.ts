import { readFileSync, statSync } from 'node:fs';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { jsonSyntaxProblem, parseJsonText } from '../common/json-guard.js';

/** One remote A2A agent as the operator configured it. */
export interface RemoteAgent {
  name: string;
  /** The remote's JSON-RPC endpoint; its card is at `<url>/agent-card.json` (or the origin's well-known card). */
  url: string;
  /** Where the card is when it is elsewhere (`card_url`; VoltAgent: `/.well-known/<agent>/agent-card.json`). */
  cardUrl?: string;
  /** The per-remote bearer ('' when none, or when `token_env` is unset). */
  token: string;
  /** Set when `token_env` names a variable that is not set. */
  missingTokenEnv?: string;
}

export const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export class RegistryError extends Error {}

/** An absolute http(s) URL without credentials, or a `RegistryError` naming the field `at`. */
function httpUrl(value: unknown, at: string): URL {
  if (typeof value !== 'string') {
    throw new RegistryError(`${at} ${value === undefined ? 'is required and ' : ''}must be a string`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RegistryError(`${at} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RegistryError(`${at} must be an absolute http(s) URL`);
  }
  if (url.username || url.password) throw new RegistryError(`${at} must not carry credentials; use auth`);
  return url;
}

/**
 * Parses and validates the registry file's content (seed 001's schema, and
 * `card_url` for a card that is not where the lookup would find it):
 * `{ "agents": { "<name>": { "url", "card_url"?, "auth": { "type": "bearer", "token" | "token_env" } } } }`.
 * The first problem is reported with the path of the bad field.
 */
export function parseRegistry(
  text: string,
  env: NodeJS.ProcessEnv,
): { agents: Map<string, RemoteAgent>; warnings: string[] } {
  let doc: unknown;
  try {
    doc = parseJsonText(text);
  } catch (err) {
    throw new RegistryError(jsonSyntaxProblem(err));
  }
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObj(doc)) throw new RegistryError('the top level must be an object with "agents"');
  for (const k of Object.keys(doc)) if (k !== 'agents') throw new RegistryError(`unknown field "${k}"`);
  if (!isObj(doc.agents)) throw new RegistryError('"agents" is required and must be an object');
  const agents = new Map<string, RemoteAgent>();
  const warnings: string[] = [];
  for (const [name, entry] of Object.entries(doc.agents)) {
    const at = `agents.${name}`;
    if (!REMOTE_NAME.test(name)) throw new RegistryError(`${at}: a name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}`);
    if (!isObj(entry)) throw new RegistryError(`${at} must be an object`);
    for (const k of Object.keys(entry)) {
      if (k !== 'url' && k !== 'card_url' && k !== 'auth') throw new RegistryError(`${at}: unknown field "${k}"`);
    }
    const url = httpUrl(entry.url, `${at}.url`);
    const cardUrl = entry.card_url === undefined ? undefined : httpUrl(entry.card_url, `${at}.card_url`).href;
    let token = '';
    let missingTokenEnv: string | undefined;
    if (entry.auth !== undefined) {
      const auth = entry.auth;
      if (!isObj(auth)) throw new RegistryError(`${at}.auth must be an object`);
      for (const k of Object.keys(auth)) {
        if (!['type', 'token', 'token_env'].includes(k)) throw new RegistryError(`${at}.auth: unknown field "${k}"`);
      }
      if (auth.type !== undefined && auth.type !== 'bearer') {
        throw new RegistryError(`${at}.auth.type must be "bearer" (the only supported type)`);
      }
      if (auth.token !== undefined && auth.token_env !== undefined) {
        throw new RegistryError(`${at}.auth: give token or token_env, not both`);
      }
      if (auth.token !== undefined) {
        if (typeof auth.token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(auth.token)) {
          throw new RegistryError(`${at}.auth.token must be printable ASCII without spaces`);
        }
        token = auth.token;
      }
      if (auth.token_env !== undefined) {
        if (typeof auth.token_env !== 'string' || !ENV_NAME.test(auth.token_env)) {
          throw new RegistryError(`${at}.auth.token_env must be an environment variable name`);
        }
        const value = env[auth.token_env];
        if (value) token = value;
        else {
          missingTokenEnv = auth.token_env;
          warnings.push(`${at}: environment variable ${auth.token_env} is not set; calls will fail with HTTP 401`);
        }
      }
    }
    agents.set(name, {
      name,
      url: url.href.replace(/\/+$/, ''),
      ...(cardUrl ? { cardUrl } : {}),
      token,
      ...(missingTokenEnv ? { missingTokenEnv } : {}),
    });
  }
  return { agents, warnings };
}

/**
 * The remote-agent registry file (`ARBITER_HOME/a2a_agents.json` by
 * default). Missing → no remotes. Changes are picked up without a restart
 * (checked on use and every 2 s); a malformed file is logged with the bad
 * field and the last good registry stays in force.
 */
@Injectable()
export class RemoteRegistry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('A2aRegistry');
  private agents = new Map<string, RemoteAgent>();
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
    return this.config.a2aRegistryPath;
  }

  list(): RemoteAgent[] {
    this.refresh();
    return [...this.agents.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): RemoteAgent | undefined {
    this.refresh();
    return this.agents.get(name);
  }

  /** Re-reads the file if it changed (one `stat` per use: cheap, and an edit is seen at once). */
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
        if (this.agents.size > 0) this.logger.log(`${this.path} is gone: no remote agents configured`);
        this.agents = new Map();
        this.stamp = 'missing';
        this.lastError = null;
      }
      return;
    }
    if (stamp === this.stamp) return;
    this.stamp = stamp;
    try {
      const { agents, warnings } = parseRegistry(readFileSync(this.path, 'utf8'), process.env);
      for (const w of warnings) this.logger.warn(`${this.path}: ${w}`);
      this.agents = agents;
      this.lastError = null;
      this.logger.log(`loaded ${agents.size} remote A2A agent(s) from ${this.path}`);
    } catch (err) {
      this.fail(err instanceof RegistryError ? err.message : 'cannot read it', stamp);
    }
  }

  private fail(problem: string, stamp: string): void {
    this.stamp = stamp;
    this.lastError = `${this.path}: ${problem}`;
    this.logger.error(
      `invalid A2A registry ${this.path}: ${problem}; keeping the previous registry (${this.agents.size} agent(s))`,
    );
  }
}
