import { BoolEnv, BytesEnv, DurationEnv, IntEnv, PatternEnv, UrlEnv } from './setting.decorators.js';

/** Where Arbiter listens, what it accepts from clients, and how long it waits for them. */
export class ServerSettings {
  /** Listening port (`0`: any free port). */
  @IntEnv('PORT', 0, 65535, { flag: '--port N' }) port = 8080;

  /** Listening address (`0.0.0.0` in containers). */
  @PatternEnv('BIND', /^[0-9A-Za-z.:_-]+$/, 'must be a host name or an IP address', { flag: '--bind ADDR' })
  bind = '127.0.0.1';

  /**
   * Absolute base URL used in agent cards behind a proxy.
   * @default unset → the request's `Host`
   */
  @UrlEnv('ARBITER_PUBLIC_BASE_URL', 'public') publicBaseUrl?: string;

  /**
   * Port of the gRPC binding (spec §10) on the `BIND` address (`0`: any free port); see
   * [gRPC](a2a.md#grpc).
   * @default unset → no gRPC
   */
  @IntEnv('ARBITER_GRPC_PORT', 0, 65535) grpcPort?: number;

  /**
   * `host:port` the cards give for the gRPC interface (a proxy or load balancer in front).
   * @default unset → base URL's host + the gRPC port
   */
  @PatternEnv('ARBITER_GRPC_PUBLIC_ADDRESS', /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/, 'must be host:port', {
    allowed: '`host:port`',
  })
  grpcPublicAddress?: string;

  /** The extended agent card (§13.3) names the agent's model family (`modelFamily`, e.g. `anthropic/claude`). */
  @BoolEnv('ARBITER_EXTENDED_CARD_MODEL') extendedCardModel = false;

  /** Trust `X-Forwarded-*` (Express `trust proxy`). */
  @BoolEnv('ARBITER_TRUST_PROXY') trustProxy = false;

  /**
   * Browser origins allowed to call the API, comma-separated (`https://console.example.com`), or `*`; empty: no
   * CORS headers (a gateway sits in front).
   */
  @PatternEnv(
    'ARBITER_CORS_ORIGINS',
    /^(\*|(https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)(,https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?)*)?$/,
    'must be * or comma-separated origins like https://console.example.com',
    { allowed: '`*`, or comma-separated `http(s)://host[:port]` origins' },
  )
  corsOrigins = '';

  /**
   * Largest accepted request body (bigger → 413); on the A2A routes, the largest body besides its file bytes (see
   * [Files](a2a.md#files)).
   */
  @BytesEnv('ARBITER_MAX_BODY_BYTES', 1024, 64 * 1024 * 1024) maxBodyBytes = 1024 * 1024;

  /** A request's headers must arrive within this (slow-header clients are answered 408 and closed). */
  @DurationEnv('ARBITER_HEADERS_TIMEOUT_MS', 1000, 600_000) headersTimeoutMs = 10_000;

  /**
   * A whole request, body included, must arrive within this (never limits a response: streams run as long as they
   * need); not below `ARBITER_HEADERS_TIMEOUT_MS`.
   */
  @DurationEnv('ARBITER_REQUEST_TIMEOUT_MS', 1000, 3_600_000) requestTimeoutMs = 30_000;

  /** An idle keep-alive connection closes after this. */
  @DurationEnv('ARBITER_KEEPALIVE_TIMEOUT_MS', 1000, 600_000) keepAliveTimeoutMs = 5_000;

  /** On SIGTERM/SIGINT, how long in-flight requests get before a forced exit (plus 5 s). */
  @DurationEnv('ARBITER_SHUTDOWN_GRACE_MS', 0, 600_000) shutdownGraceMs = 10_000;

  /** Idle time before an SSE stream gets a `: keep-alive` comment. */
  @DurationEnv('ARBITER_SSE_HEARTBEAT_MS', 100, 300_000) sseHeartbeatMs = 15_000;

  /** Events a live subscriber may have waiting; beyond that its stream ends with an error naming the seq to resume after. */
  @IntEnv('ARBITER_SSE_BUFFER_EVENTS', 1, 1_000_000) sseBufferEvents = 10_000;
}
