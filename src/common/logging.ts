import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { LoggerService } from '@nestjs/common';
import { pino, type Level, type Logger as Pino } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';

/**
 * The process's JSON logger (pino) and the request log (pino-http), with no
 * request-scoped context store: an `AsyncLocalStorage` per request switches
 * on Node's promise hooks for every promise in the process, which cost about
 * 3% of the CPU of a blocking A2A send. What a request line should say beyond
 * method, URL and status, its handler puts in `requestLog(res)`; code that
 * logs on behalf of a request passes its ids explicitly.
 */

/** Fields the handler adds to its request's log line (tenant, agent, A2A method, dialect, error code, task). */
export function requestLog(res: ServerResponse): Record<string, unknown> {
  const r = res as ServerResponse & { arbiterLog?: Record<string, unknown> };
  return (r.arbiterLog ??= {});
}

export interface LoggingOptions {
  /** The id of a request: honoured from `X-Request-Id` or minted (see `assignRequestId`). */
  requestId: (req: IncomingMessage, res: ServerResponse) => string;
  /** Requests that get no log line (health probes). */
  quiet?: (req: IncomingMessage) => boolean;
}

/**
 * The process's logger. `pretty` (`LOG_FORMAT=pretty`, for development)
 * writes through pino-pretty in this thread, loaded only then; the same
 * redaction applies.
 */
export function rootLogger(level: string, format: 'json' | 'pretty' = 'json'): Pino {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.query.access_token'],
      censor: '[redacted]',
    },
  };
  return format === 'pretty' ? pino(options, prettyStream()) : pino(options);
}

/** The start-up logger, before the configuration is read: JSON, or pretty when `LOG_FORMAT=pretty`. */
export function earlyLogger(env: NodeJS.ProcessEnv = process.env): Pino {
  return rootLogger('info', env.LOG_FORMAT === 'pretty' ? 'pretty' : 'json');
}

function prettyStream(): NodeJS.WritableStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (opts: object) => NodeJS.WritableStream;
  return pretty({
    colorize: process.stdout.isTTY,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    sync: true,
  });
}

/** One line per request when it ends: id, method, path without the query, status, time, and `requestLog` fields. */
export function requestLogger(logger: Pino, opts: LoggingOptions): HttpLogger {
  return pinoHttp({
    logger,
    genReqId: opts.requestId,
    customAttributeKeys: { reqId: 'request_id' },
    // The request's own logger (`req.log`) is not used: skip building a child logger with its bindings.
    quietReqLogger: true,
    serializers: {
      req: (req: { id: unknown; method: string; url: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url.split('?')[0],
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customProps: (_req, res) => (res as ServerResponse & { arbiterLog?: Record<string, unknown> }).arbiterLog ?? {},
    autoLogging: opts.quiet ? { ignore: opts.quiet } : true,
  });
}

/**
 * Nest's `Logger` calls, as pino lines: `logger.log('text')`, and
 * `logger.error({ err, taskId }, 'message')` with the object's fields on the
 * line. The logger's context (its class name) becomes `context`.
 */
export class NestPino implements LoggerService {
  constructor(
    private readonly pino: Pino,
    /** Lines to leave out, by context (Nest's own report of a failed start, which the caller reports once). */
    private readonly skip: ReadonlySet<string> = new Set(),
  ) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    // Nest's Logger appends its context; `error()` may pass an (undefined) stack before it.
    const rest = params.filter((p) => p !== undefined);
    const context = rest.length > 0 && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    if (context && this.skip.has(context)) return;
    const base = context ? { context } : {};
    if (message instanceof Error) {
      this.pino[level]({ ...base, err: message }, typeof rest[0] === 'string' ? rest[0] : message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.pino[level](
        { ...base, ...(message as Record<string, unknown>) },
        typeof rest[0] === 'string' ? rest[0] : '',
      );
    } else {
      // A stack Nest passes with an error message.
      const stack =
        level === 'error' && typeof rest[0] === 'string' && rest[0].includes('\n    at ') ? rest[0] : undefined;
      this.pino[level](stack ? { ...base, stack } : base, String(message));
    }
  }
}
