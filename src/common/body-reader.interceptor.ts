import {
  Injectable,
  Logger,
  SetMetadata,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { AppConfig } from '../config/app-config.js';
import { DomainError, requestIdOf } from './errors.js';
import { bodyProblem, hasBody, isJsonType, isUtf8, jsonBody, mediaTypeOf, readBody } from './http/read-body.js';
import { safeError } from './safe-error.js';
import { findJsonProblem, JsonTextError, MAX_JSON_DEPTH, tooDeep, tooDeepAt } from './json-guard.js';

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

/**
 * Reads request bodies after the access guard has accepted the bearer, never
 * before: an unauthenticated request is refused without its body being read
 * (the refusal closes the connection; see `sendError`), so it costs a few
 * KiB of headers at most. JSON only (UTF-8; gzip, deflate or br allowed), up
 * to `ARBITER_MAX_BODY_BYTES`, read as the A2A routes read theirs
 * (`readBody`): a body of another media type is a 415, malformed JSON a 400,
 * an oversize body a 413 at once — a declared length before a byte is read, a
 * stream as it passes the limit — and the connection closed, the rest unread.
 * Path parameters and the query string are held to the same text rules as
 * the body (no NUL, no unpaired surrogate: a 400 naming the parameter).
 */
@Injectable()
export class BodyReader implements NestInterceptor {
  private readonly logger = new Logger('BodyReader');
  private readonly limit: number;

  constructor(config: AppConfig) {
    this.limit = config.maxBodyBytes;
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
      await this.readJson(req);
    } catch (err) {
      // Refused before its body was read whole (too large, say): the answer closes the connection rather than
      // read what is still coming.
      if (!req.complete) res.setHeader('Connection', 'close');
      throw this.refusal(err, req);
    }
    return next.handle();
  }

  private async readJson(req: Request): Promise<void> {
    if (!hasBody(req)) return;
    const media = mediaTypeOf(req.headers['content-type'] ?? '');
    if (!media || !isJsonType(media.type)) {
      throw new DomainError('unsupported_media_type', 'request bodies must be JSON (Content-Type: application/json)');
    }
    if (!isUtf8(media.charset)) {
      throw new DomainError(
        'unsupported_media_type',
        'request bodies must be UTF-8 JSON (Content-Type: application/json)',
      );
    }
    // Within the limit as it arrives (a declared length over it is refused before a byte is read), UTF-8 checked.
    const { text } = await readBody(req, this.limit);
    // Nesting is bounded before JSON.parse, whose cost on deep nesting is far from linear.
    const deep = tooDeepAt(text);
    if (deep !== -1) throw tooDeep(text, deep, MAX_JSON_DEPTH);
    // Empty is an empty object (as body-parser has it); blanks alone are no JSON text.
    req.body = text.length > 0 ? jsonBody(text) : {};
  }

  /** A failure to read a body as the error the client gets. */
  private refusal(err: unknown, req: Request): unknown {
    if (err instanceof DomainError) return err;
    if (err instanceof JsonTextError) return bodyProblem(err);
    this.logger.warn(
      { request_id: requestIdOf(req), method: req.method, url: req.originalUrl.split('?')[0], reason: safeError(err) },
      'request body refused',
    );
    return new DomainError('invalid_json', 'malformed request body');
  }
}
