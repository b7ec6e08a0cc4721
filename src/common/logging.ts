import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { LoggerService } from '@nestjs/common';
import { pino, type Level, type Logger as Pino } from 'pino';

/**
 * The process's JSON logger (pino), with no request-scoped context store: an
 * `AsyncLocalStorage` per request switches on Node's promise hooks for every
 * promise in the process, which cost about 3% of the CPU of a blocking A2A
 * send. Each request gets one line when it ends (`RequestRecorder`); what it
 * should say beyond method, URL and status, its handler puts in
 * `requestLog(res)`; code that logs on behalf of a request passes its ids
 * explicitly.
 */

/** Fields the handler adds to its request's log line (tenant, agent, A2A method, dialect, error code, task). */
export function requestLog(res: ServerResponse): Record<string, unknown> {
  const r = res as ServerResponse & { arbiterLog?: Record<string, unknown> };
  return (r.arbiterLog ??= {});
}

/**
 * The process's logger. `pretty` (`LOG_FORMAT=pretty`, for development)
 * writes through pino-pretty in this thread, loaded only then; the same
 * redaction applies.
 *
 * JSON lines go to stdout asynchronously (a server's lines do not wait on the
 * pipe) unless `sync`: a line whose write is still in flight when
 * `process.exit` runs is lost (pino flushes only what it has not begun to
 * write), so a line the process exits right after — a refused start, a
 * command's last word — goes through a synchronous logger.
 */
export function rootLogger(level: string, format: 'json' | 'pretty' = 'json', sync = false): Pino {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.query.access_token'],
      censor: '[redacted]',
    },
  };
  if (format === 'pretty') return pino(options, prettyStream());
  return sync ? pino(options, pino.destination({ dest: 1, sync: true })) : pino(options);
}

/**
 * The start-up and exit logger, usable before the configuration is read:
 * JSON, or pretty when `LOG_FORMAT=pretty`; synchronous, so that the line
 * written just before `process.exit` is on stdout when the process ends.
 */
export function earlyLogger(env: NodeJS.ProcessEnv = process.env): Pino {
  return rootLogger('info', env.LOG_FORMAT === 'pretty' ? 'pretty' : 'json', true);
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

/**
 * Nest's own start-up lines (a line per module, controller and route: about
 * eighty) — at debug level, so that what the operator needs (the admin
 * token, the address, the console's URL) is not buried under them.
 */
const NEST_BOOT_CHATTER: ReadonlySet<string> = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
  'NestMicroservice',
]);

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
    /** Contexts whose info lines are debug lines (Nest's account of every module and route it set up). */
    private readonly chatter: ReadonlySet<string> = NEST_BOOT_CHATTER,
  ) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && this.chatter.has(context) ? 'debug' : 'info', message, params);
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
