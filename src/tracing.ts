/**
 * Preloaded with `node --import ./dist/src/tracing.js dist/src/main.js` (the
 * start scripts and the image do, besides Node's own flags: docs/operating.md):
 * starts OpenTelemetry tracing before the application's modules load, when the
 * `OTEL_*` variables ask for it (see `src/tracing/sdk.ts`). The server flushes
 * the last spans before it exits.
 */
import { startTracing, tracingRequested } from './tracing/sdk.js';

if (tracingRequested()) await startTracing();
