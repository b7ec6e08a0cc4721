import { register } from 'node:module';
import type { tracing as sdkTracing } from '@opentelemetry/sdk-node';
import { tracingStarted } from './spans.js';

/**
 * OpenTelemetry tracing: `@opentelemetry/sdk-node` with the http, express
 * and pg instrumentations, exporting by the standard `OTEL_*` variables
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_TRACES_EXPORTER`, `OTEL_SERVICE_NAME`,
 * `OTEL_TRACES_SAMPLER` …).
 *
 * Arbiter is ESM: an instrumentation can patch express and pg only if the
 * module loader hook (import-in-the-middle) is registered before they are
 * imported, so this runs from `node --import ./dist/src/tracing.js` (see
 * `src/tracing.ts`), ahead of the application. The hook intercepts only the
 * modules the instrumentations asked for. Off (nothing registered, nothing
 * loaded) unless an exporter is configured.
 */

type Env = Record<string, string | undefined>;

/** Whether the environment asks for traces: an OTLP endpoint or an exporter other than `none`, and the SDK not disabled. */
export function tracingRequested(env: Env = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.length > 0) return !exporters.every((e) => e === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

export interface StartedTracing {
  /** Flushes pending spans and stops the SDK. */
  shutdown(): Promise<void>;
}

/**
 * Registers the loader hook and starts the SDK. `exporter` replaces the one
 * the environment names (tests pass an in-memory exporter; spans are then
 * exported one by one as they end).
 */
export async function startTracing(
  opts: { exporter?: sdkTracing.SpanExporter; serviceName?: string } = {},
): Promise<StartedTracing> {
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, registerOptions);
  // Loaded only when tracing is on: the SDK and its exporters are not small.
  const [
    { NodeSDK, tracing },
    { HttpInstrumentation },
    { ExpressInstrumentation, ExpressLayerType },
    { PgInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: opts.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'arbiter',
    // Metrics are Prometheus's (/metrics): OTLP metrics only when OTEL_METRICS_EXPORTER asks for them (the SDK's
    // default would export them too, and wait seconds at shutdown for a collector that may not be there).
    ...(process.env.OTEL_METRICS_EXPORTER?.trim() ? {} : { metricReaders: [] }),
    ...(opts.exporter ? { spanProcessors: [new tracing.SimpleSpanProcessor(opts.exporter)] } : {}),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes are not worth a trace each.
        ignoreIncomingRequestHook: (req) => {
          const url = req.url ?? '';
          return url.startsWith('/v1/health') || url === '/metrics' || url.startsWith('/metrics?');
        },
        // Every outbound request Arbiter sends over node:http goes through the egress guard, which makes its own
        // client span (origin and path only: a query string may hold a secret) and sends `traceparent` itself.
        // This instrumentation's own would name the full URL, query included.
        ignoreOutgoingRequestHook: () => true,
      }),
      // Route handlers only: a span per Nest middleware layer says nothing useful.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  tracingStarted();
  await waitForAllMessagesAcknowledged();
  let stopped: Promise<void> | undefined;
  const started = { shutdown: () => (stopped ??= sdk.shutdown()) };
  active = started;
  return started;
}

let active: StartedTracing | undefined;

/** Flushes and stops tracing if it was started (the server calls this before it exits). */
export async function stopTracing(): Promise<void> {
  await active?.shutdown().catch(() => undefined);
}
