import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateBy,
} from 'class-validator';
import { MODEL_ID_HINT, MODEL_ID_PATTERN, routeModel } from './model-routes.js';

/** Environment variable names, with the config property each one feeds. */
export const CONFIG_ENV = {
  port: 'PORT',
  bind: 'BIND',
  grpcPort: 'ARBITER_GRPC_PORT',
  grpcPublicAddress: 'ARBITER_GRPC_PUBLIC_ADDRESS',
  databaseUrl: 'DATABASE_URL',
  home: 'ARBITER_HOME',
  adminToken: 'ARBITER_ADMIN_TOKEN',
  adminTokenPath: 'ARBITER_ADMIN_TOKEN_FILE',
  publicBaseUrl: 'ARBITER_PUBLIC_BASE_URL',
  logLevel: 'LOG_LEVEL',
  logFormat: 'LOG_FORMAT',
  maxBodyBytes: 'ARBITER_MAX_BODY_BYTES',
  headersTimeoutMs: 'ARBITER_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'ARBITER_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'ARBITER_KEEPALIVE_TIMEOUT_MS',
  dbPoolSize: 'ARBITER_DB_POOL_SIZE',
  shutdownGraceMs: 'ARBITER_SHUTDOWN_GRACE_MS',
  trustProxy: 'ARBITER_TRUST_PROXY',
  corsOrigins: 'ARBITER_CORS_ORIGINS',
  metricsToken: 'ARBITER_METRICS_TOKEN',
  echoChunks: 'ARBITER_ECHO_CHUNKS',
  echoDelayMs: 'ARBITER_ECHO_DELAY_MS',
  sseHeartbeatMs: 'ARBITER_SSE_HEARTBEAT_MS',
  sseBufferEvents: 'ARBITER_SSE_BUFFER_EVENTS',
  maxTextFileBytes: 'ARBITER_MAX_TEXT_FILE_BYTES',
  maxFileBytes: 'ARBITER_MAX_FILE_BYTES',
  maxMessageFileBytes: 'ARBITER_MAX_MESSAGE_FILE_BYTES',
  listPageBytes: 'ARBITER_LIST_PAGE_BYTES',
  leaseMs: 'ARBITER_LEASE_MS',
  tenantSendsPerMinute: 'ARBITER_TENANT_SENDS_PER_MINUTE',
  tenantMaxRunningTasks: 'ARBITER_TENANT_MAX_RUNNING_TASKS',
  tenantMaxOpenStreams: 'ARBITER_TENANT_MAX_OPEN_STREAMS',
  quotaSyncMs: 'ARBITER_QUOTA_SYNC_MS',
  retentionDays: 'ARBITER_RETENTION_DAYS',
  defaultModel: 'ARBITER_DEFAULT_MODEL',
  providerTimeoutMs: 'ARBITER_PROVIDER_TIMEOUT_MS',
  anthropicApiKey: 'ANTHROPIC_API_KEY',
  anthropicBaseUrl: 'ANTHROPIC_BASE_URL',
  openaiApiKey: 'OPENAI_API_KEY',
  openaiBaseUrl: 'OPENAI_BASE_URL',
  ollamaHost: 'OLLAMA_HOST',
  openrouterApiKey: 'OPENROUTER_API_KEY',
  openrouterBaseUrl: 'OPENROUTER_BASE_URL',
  maxModelCalls: 'ARBITER_MAX_MODEL_CALLS',
  maxDelegationDepth: 'ARBITER_MAX_DELEGATION_DEPTH',
  maxWriteBytes: 'ARBITER_MAX_WRITE_BYTES',
  fetchTimeoutMs: 'ARBITER_FETCH_TIMEOUT_MS',
  fetchAllowlist: 'ARBITER_FETCH_ALLOWLIST',
  a2aAgentsFile: 'ARBITER_A2A_AGENTS_FILE',
  a2aAllowPrivate: 'ARBITER_A2A_ALLOW_PRIVATE',
  a2aCardTtlMs: 'ARBITER_A2A_CARD_TTL_MS',
  a2aTimeoutMs: 'ARBITER_A2A_TIMEOUT_MS',
  a2aCardTimeoutMs: 'ARBITER_A2A_CARD_TIMEOUT_MS',
  extendedCardModel: 'ARBITER_EXTENDED_CARD_MODEL',
  pushAllowlist: 'ARBITER_PUSH_ALLOWLIST',
  pushTimeoutMs: 'ARBITER_PUSH_TIMEOUT_MS',
  pushMaxAttempts: 'ARBITER_PUSH_MAX_ATTEMPTS',
  pushMaxAgeMs: 'ARBITER_PUSH_MAX_AGE_MS',
  pushBackoffBaseMs: 'ARBITER_PUSH_BACKOFF_BASE_MS',
  pushBackoffMaxMs: 'ARBITER_PUSH_BACKOFF_MAX_MS',
  pushPollMs: 'ARBITER_PUSH_POLL_MS',
  pushLeaseMs: 'ARBITER_PUSH_LEASE_MS',
  mcpServersFile: 'ARBITER_MCP_SERVERS_FILE',
  mcpAllowPrivate: 'ARBITER_MCP_ALLOW_PRIVATE',
  mcpAllowlist: 'ARBITER_MCP_ALLOWLIST',
  mcpTimeoutMs: 'ARBITER_MCP_TIMEOUT_MS',
  mcpStartTimeoutMs: 'ARBITER_MCP_START_TIMEOUT_MS',
  mcpIdleMs: 'ARBITER_MCP_IDLE_MS',
  searchProvider: 'ARBITER_SEARCH_PROVIDER',
  searxngUrl: 'ARBITER_SEARXNG_URL',
  braveApiKey: 'BRAVE_SEARCH_API_KEY',
  braveBaseUrl: 'BRAVE_SEARCH_BASE_URL',
  tavilyApiKey: 'TAVILY_API_KEY',
  tavilyBaseUrl: 'TAVILY_BASE_URL',
  searchTimeoutMs: 'ARBITER_SEARCH_TIMEOUT_MS',
  searchResults: 'ARBITER_SEARCH_RESULTS',
} as const satisfies Record<string, string>;

export type ConfigKey = keyof typeof CONFIG_ENV;

export const SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A model id some provider serves (see `model-routes.ts`): an unknown provider is refused at start. */
function IsRoutableModel(): PropertyDecorator {
  return ValidateBy({
    name: 'isRoutableModel',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && MODEL_ID_PATTERN.test(value) && !!routeModel(value),
      defaultMessage: () => `must be ${MODEL_ID_HINT}`,
    },
  });
}

const toInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
const toBool = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  return value;
};

/**
 * The one validated configuration object, built once at boot from the
 * environment (and the `--port` / `--bind` flags). Secrets (`adminToken`,
 * credentials inside `databaseUrl`) are never logged: use `describe()`.
 */
export class AppConfig {
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 65535' })
  @Min(0, { message: 'must be an integer between 0 and 65535' })
  @Max(65535, { message: 'must be an integer between 0 and 65535' })
  port = 8080;

  @IsString()
  @Matches(/^[0-9A-Za-z.:_-]+$/, { message: 'must be a host name or an IP address' })
  bind = '127.0.0.1';

  /** The port of the gRPC binding (spec §10), on the same address as HTTP; unset: no gRPC server. 0 picks a free port. */
  @IsOptional()
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 65535' })
  @Min(0, { message: 'must be an integer between 0 and 65535' })
  @Max(65535, { message: 'must be an integer between 0 and 65535' })
  grpcPort?: number;

  /**
   * The `host:port` agent cards give as the gRPC interface's URL (a proxy or
   * load balancer in front); unset: the host of the request's base URL and
   * the port gRPC listens on.
   */
  @IsOptional()
  @Matches(/^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/, { message: 'must be host:port' })
  grpcPublicAddress?: string;

  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// or postgresql:// URL' })
  databaseUrl?: string;

  @IsString()
  @MinLength(1, { message: 'must not be empty' })
  home = join(homedir(), '.arbiter');

  @IsOptional()
  @Matches(/^adm_[A-Za-z0-9_-]{28,}$/, {
    message: 'must be "adm_" followed by at least 28 characters from [A-Za-z0-9_-]',
  })
  adminToken?: string;

  /** A file holding the admin token (a container secret): read at start, never created or changed. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  adminTokenPath?: string;

  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, {
    message: 'must be an absolute http(s) URL without query or fragment',
  })
  publicBaseUrl?: string;

  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  logLevel: LogLevel = 'info';

  /** `json` (one JSON object a line, for collectors) or `pretty` (pino-pretty, for a developer's terminal). */
  @IsIn(['json', 'pretty'], { message: 'must be json or pretty' })
  logFormat: 'json' | 'pretty' = 'json';

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1024 and 67108864' })
  @Min(1024, { message: 'must be an integer between 1024 and 67108864' })
  @Max(64 * 1024 * 1024, { message: 'must be an integer between 1024 and 67108864' })
  maxBodyBytes = 1024 * 1024;

  /** How long a client may take to send a request's headers (slow-header attacks end here). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 600000' })
  @Min(1000, { message: 'must be an integer between 1000 and 600000' })
  @Max(600_000, { message: 'must be an integer between 1000 and 600000' })
  headersTimeoutMs = 10_000;

  /** How long a client may take to send a whole request, body included (not the response: streams may run for hours). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 3600000' })
  @Min(1000, { message: 'must be an integer between 1000 and 3600000' })
  @Max(3_600_000, { message: 'must be an integer between 1000 and 3600000' })
  requestTimeoutMs = 30_000;

  /** How long an idle keep-alive connection stays open between requests. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 600000' })
  @Min(1000, { message: 'must be an integer between 1000 and 600000' })
  @Max(600_000, { message: 'must be an integer between 1000 and 600000' })
  keepAliveTimeoutMs = 5_000;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 200' })
  @Min(1, { message: 'must be an integer between 1 and 200' })
  @Max(200, { message: 'must be an integer between 1 and 200' })
  dbPoolSize = 10;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 600000' })
  @Min(0, { message: 'must be an integer between 0 and 600000' })
  @Max(600_000, { message: 'must be an integer between 0 and 600000' })
  shutdownGraceMs = 10_000;

  /**
   * Browser origins allowed to call the API (CORS), comma-separated
   * (`https://console.example.com,http://localhost:5173`), or `*`. Empty: no
   * CORS headers at all — an API gateway usually sits in front.
   */
  @Matches(/^(\*|(https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)(,https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)*)?$/, {
    message: 'must be * or comma-separated origins like https://console.example.com',
  })
  corsOrigins = '';

  /** A bearer token for Prometheus scrapes of `/metrics` (the admin token works too); unset: admin token only. */
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{16,256}$/, { message: 'must be 16-256 printable characters without spaces' })
  metricsToken?: string;

  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  trustProxy = false;

  /** Whether an agent's extended card (§13.3) names its model family (e.g. `anthropic/claude`). Off by default. */
  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  extendedCardModel = false;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 64' })
  @Min(1, { message: 'must be an integer between 1 and 64' })
  @Max(64, { message: 'must be an integer between 1 and 64' })
  echoChunks = 4;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 10000' })
  @Min(0, { message: 'must be an integer between 0 and 10000' })
  @Max(10_000, { message: 'must be an integer between 0 and 10000' })
  echoDelayMs = 15;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 300000' })
  @Min(100, { message: 'must be an integer between 100 and 300000' })
  @Max(300_000, { message: 'must be an integer between 100 and 300000' })
  sseHeartbeatMs = 15_000;

  /** Events a live subscriber may have waiting before its stream is closed with a resume hint. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 1000000' })
  @Min(1, { message: 'must be an integer between 1 and 1000000' })
  @Max(1_000_000, { message: 'must be an integer between 1 and 1000000' })
  sseBufferEvents = 10_000;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 16777216' })
  @Min(0, { message: 'must be an integer between 0 and 16777216' })
  @Max(16 * 1024 * 1024, { message: 'must be an integer between 0 and 16777216' })
  maxTextFileBytes = 256 * 1024;

  /** The largest file part (raw bytes, decoded) a message may carry; stored with its task. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 67108864' })
  @Min(1, { message: 'must be an integer between 1 and 67108864' })
  @Max(64 * 1024 * 1024, { message: 'must be an integer between 1 and 67108864' })
  maxFileBytes = 5 * 1024 * 1024;

  /** The most file bytes (decoded, all file parts together) one message may carry. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 67108864' })
  @Min(1, { message: 'must be an integer between 1 and 67108864' })
  @Max(64 * 1024 * 1024, { message: 'must be an integer between 1 and 67108864' })
  maxMessageFileBytes = 10 * 1024 * 1024;

  /**
   * The most content (history, artifacts, metadata and status messages, as JSON text) one page of a task
   * list carries after its first task: a longer page is cut short and continued by its page token.
   */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 65536 and 268435456' })
  @Min(64 * 1024, { message: 'must be an integer between 65536 and 268435456' })
  @Max(256 * 1024 * 1024, { message: 'must be an integer between 65536 and 268435456' })
  listPageBytes = 4 * 1024 * 1024;

  /**
   * The body limit of the A2A routes that take messages: `ARBITER_MAX_BODY_BYTES` for the JSON around
   * the files, plus the base64 size of the most file bytes a message may carry.
   */
  get a2aBodyBytes(): number {
    return this.maxBodyBytes + Math.ceil(this.maxMessageFileBytes / 3) * 4;
  }

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 500 and 600000' })
  @Min(500, { message: 'must be an integer between 500 and 600000' })
  @Max(600_000, { message: 'must be an integer between 500 and 600000' })
  leaseMs = 30_000;

  /** Sends (new messages on any surface) per tenant per minute, summed over replicas; 0 = unlimited. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 1000000' })
  @Min(0, { message: 'must be an integer between 0 and 1000000' })
  @Max(1_000_000, { message: 'must be an integer between 0 and 1000000' })
  tenantSendsPerMinute = 0;

  /** Tasks of one tenant running at once, over all replicas; 0 = unlimited. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 1000000' })
  @Min(0, { message: 'must be an integer between 0 and 1000000' })
  @Max(1_000_000, { message: 'must be an integer between 0 and 1000000' })
  tenantMaxRunningTasks = 100;

  /** Streams (SSE) one tenant may hold open at once, over all replicas; 0 = unlimited. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 1000000' })
  @Min(0, { message: 'must be an integer between 0 and 1000000' })
  @Max(1_000_000, { message: 'must be an integer between 0 and 1000000' })
  tenantMaxOpenStreams = 1000;

  /** How often each replica adds its counts to the shared ones in PostgreSQL (the quotas' cross-replica lag). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 50 and 60000' })
  @Min(50, { message: 'must be an integer between 50 and 60000' })
  @Max(60_000, { message: 'must be an integer between 50 and 60000' })
  quotaSyncMs = 1_000;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 3650' })
  @Min(1, { message: 'must be an integer between 1 and 3650' })
  @Max(3650, { message: 'must be an integer between 1 and 3650' })
  retentionDays = 30;

  @IsRoutableModel()
  defaultModel = 'echo';

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 3600000' })
  @Min(1000, { message: 'must be an integer between 1000 and 3600000' })
  @Max(3_600_000, { message: 'must be an integer between 1000 and 3600000' })
  providerTimeoutMs = 120_000;

  @IsOptional()
  @IsString()
  @MinLength(8, { message: 'must be at least 8 characters' })
  anthropicApiKey?: string;

  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  anthropicBaseUrl = 'https://api.anthropic.com';

  @IsOptional()
  @IsString()
  @MinLength(1)
  openaiApiKey?: string;

  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  openaiBaseUrl?: string;

  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  ollamaHost = 'http://localhost:11434/v1';

  @IsOptional()
  @IsString()
  @MinLength(1)
  openrouterApiKey?: string;

  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http(s) URL' })
  openrouterBaseUrl = 'https://openrouter.ai/api/v1';

  /** Model calls an agent may make in one turn (each tool round trip is one more). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 50' })
  @Min(1, { message: 'must be an integer between 1 and 50' })
  @Max(50, { message: 'must be an integer between 1 and 50' })
  maxModelCalls = 6;

  /** How deep `/agent` delegation may nest below the agent the request named. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 8' })
  @Min(0, { message: 'must be an integer between 0 and 8' })
  @Max(8, { message: 'must be an integer between 0 and 8' })
  maxDelegationDepth = 2;

  /** Largest file one `/write` may produce. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 10485760' })
  @Min(1, { message: 'must be an integer between 1 and 10485760' })
  @Max(10 * 1024 * 1024, { message: 'must be an integer between 1 and 10485760' })
  maxWriteBytes = 256 * 1024;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 120000' })
  @Min(100, { message: 'must be an integer between 100 and 120000' })
  @Max(120_000, { message: 'must be an integer between 100 and 120000' })
  fetchTimeoutMs = 30_000;

  /**
   * `host` or `host:port` entries `/fetch` may reach even though they resolve
   * to private or loopback addresses (tests, in-cluster services). Empty by default.
   */
  @IsString()
  @Matches(/^[A-Za-z0-9.:[\],_-]*$/, { message: 'must be comma-separated host or host:port entries' })
  fetchAllowlist = '';

  /** The remote A2A agent registry; default `ARBITER_HOME/a2a_agents.json`. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  a2aAgentsFile?: string;

  /** Let `/a2a` reach private and loopback addresses (in-cluster remotes). Off by default. */
  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  a2aAllowPrivate = false;

  /** How long a remote's agent card is reused when the remote sends no Cache-Control. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 86400000' })
  @Min(0, { message: 'must be an integer between 0 and 86400000' })
  @Max(86_400_000, { message: 'must be an integer between 0 and 86400000' })
  a2aCardTtlMs = 300_000;

  /** An `/a2a call` from send to the remote task's end. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 3600000' })
  @Min(1000, { message: 'must be an integer between 1000 and 3600000' })
  @Max(3_600_000, { message: 'must be an integer between 1000 and 3600000' })
  a2aTimeoutMs = 120_000;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 120000' })
  @Min(100, { message: 'must be an integer between 100 and 120000' })
  @Max(120_000, { message: 'must be an integer between 100 and 120000' })
  a2aCardTimeoutMs = 10_000;

  /**
   * `host` or `host:port` entries push webhooks may target even though they
   * resolve to private or loopback addresses. Empty by default.
   */
  @IsString()
  @Matches(/^[A-Za-z0-9.:[\],_-]*$/, { message: 'must be comma-separated host or host:port entries' })
  pushAllowlist = '';

  /** One webhook POST, connection to response (spec §4.3.3 recommends 10–30 s). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 120000' })
  @Min(100, { message: 'must be an integer between 100 and 120000' })
  @Max(120_000, { message: 'must be an integer between 100 and 120000' })
  pushTimeoutMs = 10_000;

  /** Failed attempts in a row after which a webhook is dead-lettered. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 1000' })
  @Min(1, { message: 'must be an integer between 1 and 1000' })
  @Max(1000, { message: 'must be an integer between 1 and 1000' })
  pushMaxAttempts = 12;

  /** How long a webhook may keep failing (from its first failure in a row) before it is dead-lettered. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1000 and 604800000' })
  @Min(1000, { message: 'must be an integer between 1000 and 604800000' })
  @Max(604_800_000, { message: 'must be an integer between 1000 and 604800000' })
  pushMaxAgeMs = 86_400_000;

  /** The first retry's delay; each further one doubles, up to `pushBackoffMaxMs`, with jitter. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 10 and 3600000' })
  @Min(10, { message: 'must be an integer between 10 and 3600000' })
  @Max(3_600_000, { message: 'must be an integer between 10 and 3600000' })
  pushBackoffBaseMs = 1_000;

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 10 and 86400000' })
  @Min(10, { message: 'must be an integer between 10 and 86400000' })
  @Max(86_400_000, { message: 'must be an integer between 10 and 86400000' })
  pushBackoffMaxMs = 300_000;

  /** How often each replica looks for due deliveries besides the wake-ups on task writes (retries, missed notices). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 50 and 600000' })
  @Min(50, { message: 'must be an integer between 50 and 600000' })
  @Max(600_000, { message: 'must be an integer between 50 and 600000' })
  pushPollMs = 2_000;

  /** How long a replica's claim on a webhook holds without renewal (a killed replica's claim expires). */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 500 and 600000' })
  @Min(500, { message: 'must be an integer between 500 and 600000' })
  @Max(600_000, { message: 'must be an integer between 500 and 600000' })
  pushLeaseMs = 30_000;

  /** The MCP server registry; default `ARBITER_HOME/mcp_servers.json`. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  mcpServersFile?: string;

  /** Let streamable-HTTP MCP servers be on private and loopback addresses (in-cluster servers). Off by default. */
  @Transform(toBool)
  @IsBoolean({ message: 'must be true or false' })
  mcpAllowPrivate = false;

  /** `host` or `host:port` entries MCP servers may use although they resolve to private or loopback addresses. */
  @IsString()
  @Matches(/^[A-Za-z0-9.:[\],_-]*$/, { message: 'must be comma-separated host or host:port entries' })
  mcpAllowlist = '';

  /** One `/mcp` request (a tool call, a tool listing) from send to answer; a stdio server that takes longer is stopped. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 3600000' })
  @Min(100, { message: 'must be an integer between 100 and 3600000' })
  @Max(3_600_000, { message: 'must be an integer between 100 and 3600000' })
  mcpTimeoutMs = 60_000;

  /** Starting an MCP server and its `initialize` handshake. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 600000' })
  @Min(100, { message: 'must be an integer between 100 and 600000' })
  @Max(600_000, { message: 'must be an integer between 100 and 600000' })
  mcpStartTimeoutMs = 20_000;

  /** How long a tenant's MCP connection (a stdio child process) stays open after its last use. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 0 and 86400000' })
  @Min(0, { message: 'must be an integer between 0 and 86400000' })
  @Max(86_400_000, { message: 'must be an integer between 0 and 86400000' })
  mcpIdleMs = 60_000;

  /** Which `/search` provider answers; default: the first configured of searxng, brave, tavily. */
  @IsOptional()
  @IsIn(SEARCH_PROVIDERS, { message: `must be one of ${SEARCH_PROVIDERS.join(', ')}` })
  searchProvider?: SearchProviderName;

  /** A SearXNG instance (its JSON API must be enabled: `search.formats` includes `json`). */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'must be an http(s) URL without query or fragment' })
  searxngUrl?: string;

  @IsOptional()
  @IsString()
  @MinLength(1)
  braveApiKey?: string;

  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'must be an http(s) URL without query or fragment' })
  braveBaseUrl = 'https://api.search.brave.com';

  @IsOptional()
  @IsString()
  @MinLength(1)
  tavilyApiKey?: string;

  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'must be an http(s) URL without query or fragment' })
  tavilyBaseUrl = 'https://api.tavily.com';

  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 100 and 120000' })
  @Min(100, { message: 'must be an integer between 100 and 120000' })
  @Max(120_000, { message: 'must be an integer between 100 and 120000' })
  searchTimeoutMs = 15_000;

  /** Results one `/search` returns. */
  @Transform(toInt)
  @IsInt({ message: 'must be an integer between 1 and 20' })
  @Min(1, { message: 'must be an integer between 1 and 20' })
  @Max(20, { message: 'must be an integer between 1 and 20' })
  searchResults = 5;

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

const SECRET_KEYS: ConfigKey[] = [
  'adminToken',
  'databaseUrl',
  'anthropicApiKey',
  'openaiApiKey',
  'openrouterApiKey',
  'braveApiKey',
  'tavilyApiKey',
  'metricsToken',
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
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

/** Parses `--port N` / `--bind ADDR` (and `--port=N`); anything else is an error. */
export function parseCliFlags(argv: string[]): Partial<Record<'port' | 'bind', string>> {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { port: { type: 'string' }, bind: { type: 'string' } },
      strict: true,
      allowPositionals: false,
    });
    return values;
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
}

/**
 * Builds and validates the config. Every problem is reported at once, each
 * naming the environment variable (or flag) that carries the bad value.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, argv: string[] = []): AppConfig {
  const flags = parseCliFlags(argv);
  const raw: Record<string, unknown> = {};
  const source: Partial<Record<ConfigKey, string>> = {};
  for (const [key, name] of Object.entries(CONFIG_ENV) as [ConfigKey, string][]) {
    const value = env[name];
    if (value !== undefined && !(value === '' && key !== 'trustProxy')) {
      raw[key] = value;
      source[key] = name;
    }
  }
  for (const key of ['port', 'bind'] as const) {
    if (flags[key] !== undefined) {
      raw[key] = flags[key];
      source[key] = `--${key}`;
    }
  }
  const config = plainToInstance(AppConfig, raw, { exposeDefaultValues: true });
  const errors = validateSync(config, { forbidUnknownValues: false });
  if (errors.length > 0) {
    const problems = errors.map((e) => {
      const key = e.property as ConfigKey;
      const name = source[key] ?? CONFIG_ENV[key] ?? key;
      const shown = SECRET_KEYS.includes(key) ? '(hidden)' : JSON.stringify(raw[key]);
      // Several validators of one field may share a message: say it once.
      const messages = [...new Set(Object.values(e.constraints ?? {}))].join('; ');
      return `${name} ${messages} (got ${shown})`;
    });
    throw new ConfigError(problems);
  }
  if (config.adminToken && config.adminTokenPath) {
    throw new ConfigError([`set ${CONFIG_ENV.adminToken} or ${CONFIG_ENV.adminTokenPath}, not both`]);
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError([
      `${CONFIG_ENV.headersTimeoutMs} must not be greater than ${CONFIG_ENV.requestTimeoutMs} (got ${config.headersTimeoutMs} > ${config.requestTimeoutMs})`,
    ]);
  }
  if (config.maxFileBytes > config.maxMessageFileBytes) {
    throw new ConfigError([
      `${CONFIG_ENV.maxFileBytes} must not be greater than ${CONFIG_ENV.maxMessageFileBytes} (got ${config.maxFileBytes} > ${config.maxMessageFileBytes})`,
    ]);
  }
  if (config.pushLeaseMs <= config.pushTimeoutMs) {
    // A claim that could expire during one POST would let another replica deliver out of order.
    throw new ConfigError([
      `${CONFIG_ENV.pushLeaseMs} must be greater than ${CONFIG_ENV.pushTimeoutMs} (got ${config.pushLeaseMs} <= ${config.pushTimeoutMs})`,
    ]);
  }
  const needs: Record<SearchProviderName, [ConfigKey, unknown]> = {
    searxng: ['searxngUrl', config.searxngUrl],
    brave: ['braveApiKey', config.braveApiKey],
    tavily: ['tavilyApiKey', config.tavilyApiKey],
  };
  if (config.searchProvider && !needs[config.searchProvider][1]) {
    const [key] = needs[config.searchProvider];
    throw new ConfigError([
      `${CONFIG_ENV.searchProvider} is ${config.searchProvider}, which needs ${CONFIG_ENV[key]} (it is not set)`,
    ]);
  }
  config.home = isAbsolute(config.home) ? config.home : resolve(config.home);
  return config;
}
