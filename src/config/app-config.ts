import { isAbsolute, join, resolve } from 'node:path';
import { readSettings } from './settings/read-settings.js';
import { checkRelations } from './settings/setting-relations.js';
import { SETTINGS_AREAS, type Settings } from './settings/settings-areas.js';
import type { SearchProviderName } from './settings/search.settings.js';

export { ConfigError, envName, parseCliFlags } from './settings/read-settings.js';
export type { ConfigKey, Settings } from './settings/settings-areas.js';
export { SEARCH_PROVIDERS, type SearchProviderName } from './settings/search.settings.js';
export type { LogLevel } from './settings/observability.settings.js';

// The settings are declared by area in ./settings/*.settings.ts (one line and a doc comment each); AppConfig
// holds them all (this interface, merged with the class: the constructor assigns every field) and adds what is
// derived from them.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface AppConfig extends Settings {}

/**
 * The one validated configuration object, built once at boot from the
 * environment (and the `--port` / `--bind` flags) by `loadConfig`. Secrets
 * (`adminToken`, credentials inside `databaseUrl`, API keys) are never
 * logged: use `describe()`.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class AppConfig {
  /** Joins validated settings areas; without them, every setting's default. */
  constructor(areas: readonly object[] = SETTINGS_AREAS.map(({ schema }) => new schema())) {
    Object.assign(this, ...areas);
  }

  /**
   * The body limit of the A2A routes that take messages: `ARBITER_MAX_BODY_BYTES` for the JSON around
   * the files, plus the base64 size of the most file bytes a message may carry.
   */
  get a2aBodyBytes(): number {
    return this.maxBodyBytes + Math.ceil(this.maxMessageFileBytes / 3) * 4;
  }

  get mcpRegistryPath(): string {
    return this.mcpServersFile ? resolve(this.mcpServersFile) : join(this.home, 'mcp_servers.json');
  }

  /** The `/search` provider in use: the one named, else the first configured; undefined when none is. */
  get activeSearchProvider(): SearchProviderName | undefined {
    if (this.searchProvider) return this.searchProvider;
    if (this.searxngUrl) return 'searxng';
    if (this.braveApiKey) return 'brave';
    if (this.tavilyApiKey) return 'tavily';
    return undefined;
  }

  get a2aRegistryPath(): string {
    return this.a2aAgentsFile ? resolve(this.a2aAgentsFile) : join(this.home, 'a2a_agents.json');
  }

  /** Directory of operator-provided, read-only agent files (`*.json`). */
  get agentsDir(): string {
    return join(this.home, 'agents');
  }

  /** Where the embedded PostgreSQL keeps its data when `DATABASE_URL` is unset. */
  get embeddedDataDir(): string {
    return join(this.home, 'pgdata');
  }

  /** Where the admin token is read from when `ARBITER_ADMIN_TOKEN` is unset: the operator's file, else `ARBITER_HOME/admin_token`. */
  get adminTokenFile(): string {
    return this.adminTokenPath ? resolve(this.adminTokenPath) : join(this.home, 'admin_token');
  }

  get usesEmbeddedDatabase(): boolean {
    return !this.databaseUrl;
  }

  /** A log-safe summary: no tokens, no database password. */
  describe(): Record<string, unknown> {
    return {
      port: this.port,
      bind: this.bind,
      grpcPort: this.grpcPort ?? null,
      home: this.home,
      database: this.databaseUrl ? redactUrl(this.databaseUrl) : `embedded (${this.embeddedDataDir})`,
      publicBaseUrl: this.publicBaseUrl ?? null,
      logLevel: this.logLevel,
      logFormat: this.logFormat,
      maxBodyBytes: this.maxBodyBytes,
      maxFileBytes: this.maxFileBytes,
      maxMessageFileBytes: this.maxMessageFileBytes,
      listPageBytes: this.listPageBytes,
      adminToken: this.adminToken ? 'from ARBITER_ADMIN_TOKEN' : `from ${this.adminTokenFile}`,
      defaultModel: this.defaultModel,
      providers: {
        anthropic: Boolean(this.anthropicApiKey),
        openai: Boolean(this.openaiApiKey || this.openaiBaseUrl),
        openrouter: Boolean(this.openrouterApiKey),
      },
      search: this.activeSearchProvider ?? null,
      mcpServersFile: this.mcpRegistryPath,
      metricsToken: Boolean(this.metricsToken),
    };
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/**
 * Builds and validates the config. Every problem is reported at once, each
 * naming the environment variable (or flag) that carries the bad value.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, argv: string[] = []): AppConfig {
  const config = new AppConfig(readSettings(env, argv));
  checkRelations(config);
  config.home = isAbsolute(config.home) ? config.home : resolve(config.home);
  return config;
}
