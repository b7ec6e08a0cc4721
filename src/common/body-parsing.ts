import { Logger } from '@nestjs/common';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { requestIdOf } from './errors.js';
import { findJsonProblem } from './json-guard.js';
import { sendError } from './http-exception.filter.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * JSON bodies only, up to `limit` bytes. A body of another media type is a 415;
 * malformed JSON a 400 and an oversize body a 413, each in the usual error
 * envelope (Express would answer these with an HTML page).
 */
export function jsonBodyMiddleware(limit: number, rawPaths?: RegExp): (RequestHandler | ErrorRequestHandler)[] {
  const logger = new Logger('BodyParser');
  // JSON-RPC endpoints parse their own bodies, after authentication, so a
  // malformed body becomes a JSON-RPC parse error rather than an HTTP 400.
  const raw = express.text({ limit, type: () => true });
  const requireJson: RequestHandler = (req, res, next) => {
    if (rawPaths && req.method === 'POST' && rawPaths.test(req.path)) {
      raw(req, res, next);
      return;
    }
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    if (hasBody && !req.is(JSON_TYPES)) {
      sendError(res, 415, {
        error: 'request bodies must be JSON (Content-Type: application/json)',
        code: 'unsupported_media_type',
        request_id: requestIdOf(req),
      });
      return;
    }
    next();
  };
  const parse = express.json({ limit, strict: true, type: JSON_TYPES });
  const onError: ErrorRequestHandler = (err: { type?: string; status?: number }, req, res, next) => {
    const requestId = requestIdOf(req);
    logger.warn(
      { request_id: requestId, method: req.method, url: req.originalUrl.split('?')[0], reason: err.type ?? err.status },
      'request body refused',
    );
    if (err.type === 'entity.too.large') {
      sendError(res, 413, {
        error: `request body exceeds ${limit} bytes`,
        code: 'payload_too_large',
        request_id: requestId,
      });
    } else if (err.type === 'entity.parse.failed') {
      sendError(res, 400, { error: 'request body is not valid JSON', code: 'invalid_json', request_id: requestId });
    } else if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
      sendError(res, err.status, { error: 'malformed request body', code: 'invalid_json', request_id: requestId });
    } else {
      next(err);
    }
  };
  const guard: RequestHandler = (req, res, next) => {
    const problem = typeof req.body === 'object' ? findJsonProblem(req.body) : undefined;
    if (problem) {
      sendError(res, 400, {
        error: `${problem.path} ${problem.problem}`,
        code: 'validation_failed',
        details: [{ field: problem.path.replace(/^body\.?/, '') || 'body', messages: [problem.problem] }],
        request_id: requestIdOf(req),
      });
      return;
    }
    next();
  };
  return [requireJson, parse, onError, guard];
}
