import type { NextFunction, Request, Response } from 'express';
import { requestLog } from '../common/logging.js';
import type { Metrics } from './metrics.service.js';

const JSONRPC_ROUTE = '/v1/a2a/agents/:id';

/**
 * Counts every HTTP request when its response closes (streams included): by
 * route template (never the raw path, whose ids would be unbounded), and,
 * for A2A calls, by binding, method, dialect and error code — the fields the
 * bindings put on the request's log line.
 */
export function httpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    res.once('close', () => {
      const path = (req.route as { path?: string | string[] } | undefined)?.path;
      const route = path === undefined ? 'unmatched' : Array.isArray(path) ? path[0] : path;
      const status = res.writableFinished || res.headersSent ? String(res.statusCode) : 'aborted';
      metrics.httpRequests.inc({ method: req.method, route, status });
      metrics.httpDuration.observe({ method: req.method, route }, (performance.now() - started) / 1000);
      const line = requestLog(res);
      if (typeof line.a2a_method === 'string') {
        const label = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
        const error = label(line.rpc_error ?? line.rest_error);
        metrics.a2aCalls.inc({
          binding: route === JSONRPC_ROUTE ? 'jsonrpc' : 'rest',
          method: line.a2a_method,
          dialect: label(line.dialect),
          error,
        });
      }
    });
    next();
  };
}
