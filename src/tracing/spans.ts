import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import { ARBITER_VERSION } from '../version.js';

/**
 * Arbiter's own spans (runs, model calls, tools, outbound HTTP) through the
 * OpenTelemetry API. Without a started SDK (see `sdk.ts`) every call here is
 * a no-op on a non-recording span: nothing is allocated beyond that.
 */
export const tracer = trace.getTracer('arbiter', ARBITER_VERSION);

/** Whether a tracing SDK was started in this process (`sdk.ts` says so); until then no span is made at all. */
let started = false;
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether a tracing SDK records spans at all: a caller may skip building a span's attributes when not. */
export const tracingOn = (): boolean => started;

/** Called by `startTracing` once the SDK runs. */
export function tracingStarted(): void {
  started = true;
}

export { SpanKind };

/** Attributes on the span of the request being served (the task id, the A2A method …). */
export function annotateActiveSpan(attributes: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(attributes);
}

/**
 * Names the route template of the HTTP request being served, as Express's
 * instrumentation does for the routes it serves: the server span becomes
 * `POST /v1/a2a/agents/:id` with `http.route`. A no-op without tracing.
 */
export function setHttpRoute(route: string): void {
  const meta = getRPCMetadata(context.active());
  if (meta?.type === RPCType.HTTP) meta.route = route;
}

/** The context a detached piece of work (a run) should continue: the one active now. */
export function currentContext(): Context {
  return context.active();
}

/**
 * Runs `fn` inside a new span that is a child of `parent` (default: the
 * active context); ends it when `fn` settles, with an error status if it
 * threw. `fn` may set more attributes, or mark a failure with `fail`.
 */
export function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  // Without an SDK the API's span would not record, and its context would change nothing: skip both (and the
  // promise an async function would put around `fn`'s).
  return started ? recorded(name, opts, fn) : fn(NOT_RECORDING);
}

async function recorded<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A span started under the active context, for work that is not one
 * function call (a stream read step by step): `within(fn)` runs `fn` with
 * the span active. The caller ends the span.
 */
export function childSpan(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
): { span: Span; within: <T>(fn: () => T) => T } {
  const parent = context.active();
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  const ctx = trace.setSpan(parent, span);
  return { span, within: (fn) => context.with(ctx, fn) };
}

/** Marks a span failed, with the error's class and a short message (never a body or a secret). */
export function fail(span: Span, err: unknown, message?: string): void {
  if (!span.isRecording()) return;
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? (err instanceof Error ? err.name : 'error') });
}

/** Adds W3C `traceparent` (and `tracestate`) for the active context to outgoing headers. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

/** Whether a span is being recorded in the active context (outbound calls outside a trace get no span of their own). */
export function tracing(): boolean {
  return trace.getActiveSpan()?.isRecording() ?? false;
}
