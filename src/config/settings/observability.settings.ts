import { EnumEnv, PatternEnv } from './setting.decorators.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Logs and Prometheus metrics. Traces are set by the standard OpenTelemetry variables
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_EXPORTER`, other `OTEL_*`), read before these settings: tracing is off
 * unless an endpoint or an exporter is set (see [Traces](operating.md#traces)).
 */
export class ObservabilitySettings {
  /** How much is logged. */
  @EnumEnv('LOG_LEVEL', LOG_LEVELS) logLevel: LogLevel = 'info';

  /**
   * `json` (one object a line, for collectors) or `pretty` (pino-pretty, for development); start-up and
   * `npm run migrate` output included.
   */
  @EnumEnv('LOG_FORMAT', ['json', 'pretty'], 'must be json or pretty') logFormat: 'json' | 'pretty' = 'json';

  /** A bearer token for Prometheus to scrape `/metrics` with; the admin token works too. */
  @PatternEnv('ARBITER_METRICS_TOKEN', /^[\x21-\x7e]{16,256}$/, 'must be 16-256 printable characters without spaces', {
    secret: true,
    allowed: '16–256 printable characters without spaces',
  })
  metricsToken?: string;
}
