import { uuid } from '../ids.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger as Pino } from 'pino';

/** What the recorder counts (the metrics module's `Metrics` has these; common/ names only what it needs). */
export interface RequestCounters {
  httpRequests: { inc(labels: { method: string; route: string; status: string }): void };
  httpDuration: { observe(labels: { method: string; route: string }, seconds: number): void };
  a2aCalls: { inc(labels: { binding: string; method: string; dialect: string; error: string }): void };
}

/** Where A2A calls answered with an error are told, by tenant (the stats module's `StatsRecorder` is one). */
export interface A2aErrorSink {
  a2aError(tenantId: string, binding: string, code: string): void;
}

/** The route template of the JSON-RPC endpoint (the HTTP+JSON binding's is `…/:id/*path`). */
export const JSONRPC_ROUTE = '/v1/a2a/agents/:id';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id: a well-formed incoming `X-Request-Id`, else a new one (kept on `req.id`). */
export function requestIdFor(req: IncomingMessage & { id?: unknown }): string {
  if (typeof req.id === 'string') return req.id;
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : uuid();
  req.id = id;
  return id;
}

/** `requestIdFor`, echoed back as `X-Request-Id`. */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  const had = typeof req.id === 'string';
  const id = requestIdFor(req);
  if (!had) res.setHeader('X-Request-Id', id);
  return id;
}

const label = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/**
 * What every HTTP request leaves behind when its response closes (streams
 * included): one log line — id, method, path without the query, status,
 * time, and the fields its handler put in `requestLog(res)` — and the
 * Prometheus counts by route template (never the raw path, whose ids are
 * unbounded) and, for A2A calls, by binding, method, dialect and error code.
 *
 * One `close` listener per request and nothing built for a line the log
 * level drops: this replaced pino-http, whose child loggers and serializers
 * cost about a tenth of a blocking A2A send's CPU even with the line off.
 * The line keeps pino-http's shape (`req`, `res`, `responseTime`,
 * `request completed` / `request errored` / `request aborted`).
 */
export class RequestRecorder {
  constructor(
    private readonly logger: Pino,
    private readonly metrics: RequestCounters,
    /** Requests that get no log line (health probes); they are still counted. */
    private readonly quiet: (url: string) => boolean = () => false,
    /** Told of every A2A call answered with an error (for the overview's statistics). */
    private readonly errors?: A2aErrorSink,
  ) {}

  /**
   * Starts the record of a request with id `id`. `route` names the route
   * template when the response closes (Express knows it only after
   * routing); undefined is `unmatched`.
   */
  track(req: IncomingMessage, res: ServerResponse, id: string, route: () => string | undefined): void {
    const started = performance.now();
    // Read now: once the client has gone, its socket no longer says where it was.
    const remote = req.socket?.remoteAddress;
    // `on`, not `once` (which wraps the listener in a new function and its state): a response closes only once.
    res.on('close', () => this.record(req, res, id, route() ?? 'unmatched', started, remote));
  }

  /** The Express middleware form, for the routes Nest serves: the route template from `req.route`. */
  middleware() {
    return (req: IncomingMessage & { route?: { path?: string | string[] } }, res: ServerResponse, next: () => void) => {
      this.track(req, res, assignRequestId(req, res), () => {
        const path = req.route?.path;
        return path === undefined ? undefined : Array.isArray(path) ? path[0] : path;
      });
      next();
    };
  }

  private record(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    route: string,
    started: number,
    remoteAddress: string | undefined,
  ): void {
    const seconds = (performance.now() - started) / 1000;
    const method = req.method ?? '';
    const status = res.writableFinished || res.headersSent ? String(res.statusCode) : 'aborted';
    this.metrics.httpRequests.inc({ method, route, status });
    this.metrics.httpDuration.observe({ method, route }, seconds);
    const fields = (res as ServerResponse & { arbiterLog?: Record<string, unknown> }).arbiterLog;
    if (fields && typeof fields.a2a_method === 'string') {
      const binding = route === JSONRPC_ROUTE ? 'jsonrpc' : 'rest';
      const error = label(fields.rpc_error ?? fields.rest_error);
      this.metrics.a2aCalls.inc({ binding, method: fields.a2a_method, dialect: label(fields.dialect), error });
      if (error && typeof fields.tenant_id === 'string') this.errors?.a2aError(fields.tenant_id, binding, error);
    }
    if (!this.logger.isLevelEnabled('info')) return;
    const url = req.url ?? '';
    if (this.quiet(url)) return;
    const q = url.indexOf('?');
    const line: Record<string, unknown> = {
      request_id: id,
      req: { id, method, url: q === -1 ? url : url.slice(0, q), remoteAddress },
      ...fields,
      // No answer went out (the client left first): no status.
      res: { statusCode: res.headersSent ? res.statusCode : null },
      responseTime: Math.round(seconds * 1000),
    };
    if (res.statusCode >= 500) {
      line.err = { type: 'Error', message: `failed with status code ${res.statusCode}` };
      this.logger.info(line, 'request errored');
    } else {
      this.logger.info(line, !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted');
    }
  }
}
