import {
  Injectable,
  Logger,
  SetMetadata,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Observable } from 'rxjs';
import { AppConfig } from '../config/app-config.js';
import { DomainError, requestIdOf } from './errors.js';
import { bodyProblem, checkUtf8 } from './http/read-body.js';
import { findJsonProblem, JsonTextError, MAX_JSON_DEPTH, parseJsonText, tooDeep, tooDeepAt } from './json-guard.js';

const JSON_TYPES = ['application/json', 'application/*+json'];

/** Nest's route-argument metadata, and its kind for `@Query()` (`RouteParamtypes.QUERY`). */
const ROUTE_ARGS = '__routeArguments__';
const QUERY_ARG = 4;
/** A query parameter every route takes: the A2A version (spec §3.6.2), also read from the query. */
const ANY_ROUTE_QUERY = new Set(['A2A-Version']);

const ANY_QUERY = 'arbiter:any-query';
/**
 * On a controller whose routes ignore what the query says beyond what they read themselves: public discovery
 * documents (agent cards, keys) and operational probes (health, metrics), which caches, proxies and scrapers may
 * call with parameters of their own.
 */
export const AnyQuery = (): ClassDecorator => SetMetadata(ANY_QUERY, true);

const takesQuery = new WeakMap<object, boolean>();

/** Whether a handler reads its query (a `@Query()` parameter, validated by its DTO then), or takes any (`AnyQuery`). */
function readsQuery(ctx: ExecutionContext): boolean {
  const handler = ctx.getHandler();
  let known = takesQuery.get(handler);
  if (known === undefined) {
    const args = (Reflect.getMetadata(ROUTE_ARGS, ctx.getClass(), handler.name) ?? {}) as Record<string, unknown>;
    known =
      Reflect.getMetadata(ANY_QUERY, ctx.getClass()) === true ||
      Object.keys(args).some((k) => Number(k.split(':')[0]) === QUERY_ARG);
    takesQuery.set(handler, known);
  }
  return known;
}

/** Runs an Express middleware to completion; its error (a body-parser `HttpError`) rejects. */
const run = (mw: RequestHandler, req: Request, res: Response): Promise<void> =>
  new Promise((resolve, reject) =>
    mw(req, res, (err?: unknown) =>
      err ? reject(err instanceof Error ? err : new Error('body could not be read')) : resolve(),
    ),
  );

/**
 * Reads request bodies after the access guard has accepted the bearer, never
 * before: an unauthenticated request is refused without its body being read
 * (the refusal closes the connection; see `sendError`), so it costs a few
 * KiB of headers at most. JSON only, up to `ARBITER_MAX_BODY_BYTES`; a body
 * of another media type is a 415, malformed JSON a 400, an oversize body a 413.
 * Path parameters and the query string are held to the same text rules as
 * the body (no NUL, no unpaired surrogate: a 400 naming the parameter).
 */
@Injectable()
export class BodyReader implements NestInterceptor {
  private readonly logger = new Logger('BodyReader');
  private readonly json: RequestHandler;
  private readonly limit: number;

  constructor(config: AppConfig) {
    this.limit = config.maxBodyBytes;
    this.json = express.json({
      limit: this.limit,
      strict: true,
      type: JSON_TYPES,
      // Nesting is bounded before body-parser's JSON.parse, whose cost on deep nesting is far from linear.
      verify: (_req, _res, buf, encoding) => {
        if (/^utf-?8$/i.test(encoding ?? 'utf-8')) checkUtf8(buf);
        const text = buf.toString((encoding as BufferEncoding | undefined) ?? 'utf8');
        const at = tooDeepAt(text);
        if (at !== -1) throw tooDeep(text, at, MAX_JSON_DEPTH);
      },
    });
  }

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (ctx.getType() !== 'http') return next.handle();
    const req = ctx.switchToHttp().getRequest<Request>();
    const res = ctx.switchToHttp().getResponse<Response>();
    // Path parameters and the query string are outside input like a body: PostgreSQL refuses NUL and unpaired
    // surrogates in text.
    const inUrl = findJsonProblem(req.params, 2, 'path') ?? findJsonProblem(req.query, 8, 'query');
    if (inUrl) {
      throw DomainError.validation(
        [{ field: inUrl.path.replace(/^(path|query)\.?/, '') || 'query', messages: [inUrl.problem] }],
        `${inUrl.path} ${inUrl.problem}`,
      );
    }
    // A route that reads no query refuses one, as a DTO refuses unknown fields: a typo is not silently dropped.
    const unknown = readsQuery(ctx) ? [] : Object.keys(req.query).filter((k) => !ANY_ROUTE_QUERY.has(k));
    if (unknown.length > 0) {
      throw DomainError.validation(unknown.map((k) => ({ field: k, messages: [`${k} should not exist`] })));
    }
    try {
      await this.readJson(req, res, this.json);
    } catch (err) {
      throw this.refusal(err, req, this.limit);
    }
    return next.handle();
  }

  private async readJson(req: Request, res: Response, json: RequestHandler): Promise<void> {
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    if (!hasBody) return;
    if (!req.is(JSON_TYPES)) {
      throw new DomainError('unsupported_media_type', 'request bodies must be JSON (Content-Type: application/json)');
    }
    await run(json, req, res);
    const problem = typeof req.body === 'object' ? findJsonProblem(req.body) : undefined;
    if (problem) {
      throw DomainError.validation(
        [{ field: problem.path.replace(/^body\.?/, '') || 'body', messages: [problem.problem] }],
        `${problem.path} ${problem.problem}`,
      );
    }
  }

  /** A body-parser failure as the error the client gets. */
  private refusal(err: unknown, req: Request, limit: number): unknown {
    if (err instanceof DomainError) return err;
    if (err instanceof JsonTextError) return bodyProblem(err);
    const e = err as { type?: string; status?: number };
    this.logger.warn(
      {
        request_id: requestIdOf(req),
        method: req.method,
        url: req.originalUrl.split('?')[0],
        reason: e.type ?? e.status,
      },
      'request body refused',
    );
    if (e.type === 'entity.too.large')
      return new DomainError('payload_too_large', `request body exceeds ${limit} bytes`);
    if (e.type === 'entity.parse.failed') return invalidJson((err as { body?: unknown }).body);
    if (e.status === 415) {
      return new DomainError(
        'unsupported_media_type',
        'request bodies must be UTF-8 JSON (Content-Type: application/json)',
      );
    }
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      return new DomainError('invalid_json', 'malformed request body');
    }
    return err;
  }
}

/** body-parser's parse failure, located: the text is parsed again only to say where it broke (never quoted). */
function invalidJson(text: unknown): DomainError {
  if (typeof text !== 'string') return new DomainError('invalid_json', 'request body is not valid JSON');
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') {
    return new DomainError('invalid_json', 'request body is not valid JSON: it must be an object or an array');
  }
  try {
    parseJsonText(text);
  } catch (err) {
    if (err instanceof JsonTextError) return bodyProblem(err);
  }
  return new DomainError('invalid_json', 'request body is not valid JSON');
}
