import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { HttpExceptionFilter } from '../../common/http-exception.filter.js';
import { toJsonRpcError } from './jsonrpc-errors.js';

/**
 * On the JSON-RPC route, a database outage before the handler runs (the
 * bearer lookup in the guard) is answered as JSON-RPC: -32603 with the
 * retryable reason, HTTP 503 and `Retry-After`, in the dialect the request
 * asked for. Everything else is answered as on every other route.
 */
@Catch()
export class JsonRpcGuardErrors implements ExceptionFilter {
  private readonly fallback = new HttpExceptionFilter();

  catch(err: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    if (isDatabaseUnavailable(err) && req.method === 'POST' && !res.headersSent) {
      const version = String(req.headers['a2a-version'] ?? '').trim();
      res.setHeader('Retry-After', '1');
      res
        .status(503)
        .json({ jsonrpc: '2.0', id: null, error: toJsonRpcError(err, version.startsWith('1') ? '1.0' : '0.3') });
      return;
    }
    this.fallback.catch(err, host);
  }
}
