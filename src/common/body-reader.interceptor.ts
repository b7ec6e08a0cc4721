import {
  Injectable,
  Logger,
  SetMetadata,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Observable } from 'rxjs';
import { AppConfig } from '../config/app-config.js';
import { DomainError, requestIdOf } from './errors.js';
import { findJsonProblem } from './json-guard.js';

const TEXT_BODY = 'arbiter:text-body';
const FILE_BODY = 'arbiter:file-body';

/**
 * The route reads its body as text and parses it itself (JSON-RPC: a
 * malformed body is a JSON-RPC parse error, not an HTTP 400). Its media type
 * must still be JSON: `application/json`, `application/a2a+json`, or none.
 */
export const JsonTextBody = (): MethodDecorator => SetMetadata(TEXT_BODY, true);

/**
 * The route takes A2A messages, whose file parts may carry bytes: its body
 * may be `ARBITER_MAX_BODY_BYTES` plus the base64 size of
 * `ARBITER_MAX_MESSAGE_FILE_BYTES` (`AppConfig.a2aBodyBytes`), and what is
 * not file bytes (`raw` / v0.3 `bytes` values) stays within
 * `ARBITER_MAX_BODY_BYTES`. The file limits themselves are checked per part
 * once the message is parsed.
 */
export const FileCarryingBody = (): MethodDecorator => SetMetadata(FILE_BODY, true);

const JSON_TYPES = ['application/json', 'application/*+json'];
/** Base64 values of `raw` (v1.0) and `bytes` (v0.3) members: base64 never needs a JSON escape. */
const FILE_VALUE = /"(?:raw|bytes)"\s*:\s*"([A-Za-z0-9+/=]*)"/g;
const WITHOUT_FILES = Symbol('arbiter.bodyWithoutFiles');

/** The body's size in bytes (`bytes`) without its file bytes. */
export function lengthWithoutFiles(body: string, bytes: number): number {
  let files = 0;
  for (const m of body.matchAll(FILE_VALUE)) files += m[1]?.length ?? 0;
  return bytes - files;
}
const RPC_TYPES = new Set(['application/json', 'application/a2a+json']);

function setWithoutFiles(req: Request, body: string, bytes: number): void {
  (req as Request & { [WITHOUT_FILES]?: number })[WITHOUT_FILES] = lengthWithoutFiles(body, bytes);
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
 */
@Injectable()
export class BodyReader implements NestInterceptor {
  private readonly logger = new Logger('BodyReader');
  /** The readers for ordinary routes and for routes that take messages with files (a larger limit). */
  private readonly readers: Record<'plain' | 'files', { json: RequestHandler; text: RequestHandler; limit: number }>;

  constructor(
    config: AppConfig,
    private readonly reflector: Reflector,
  ) {
    const readers = (limit: number, measure: boolean) => ({
      json: express.json({
        limit,
        strict: true,
        type: JSON_TYPES,
        // Measured on the raw bytes (latin1 keeps one char per byte), before parsing.
        ...(measure
          ? {
              verify: (req: Request, _res: Response, buf: Buffer) =>
                setWithoutFiles(req, buf.toString('latin1'), buf.length),
            }
          : {}),
      }),
      text: express.text({ limit, type: () => true }),
      limit,
    });
    this.readers = { plain: readers(config.maxBodyBytes, false), files: readers(config.a2aBodyBytes, true) };
    this.plainLimit = config.maxBodyBytes;
  }

  private readonly plainLimit: number;

  async intercept(ctx: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (ctx.getType() !== 'http') return next.handle();
    const req = ctx.switchToHttp().getRequest<Request>();
    const res = ctx.switchToHttp().getResponse<Response>();
    const asText = this.reflector.get<boolean | undefined>(TEXT_BODY, ctx.getHandler()) === true;
    const withFiles = this.reflector.get<boolean | undefined>(FILE_BODY, ctx.getHandler()) === true;
    const reader = this.readers[withFiles ? 'files' : 'plain'];
    try {
      if (asText) await this.readRpc(req, res, reader.text);
      else await this.readJson(req, res, reader.json);
      if (withFiles) {
        if (asText && typeof req.body === 'string') setWithoutFiles(req, req.body, Buffer.byteLength(req.body));
        const rest = (req as Request & { [WITHOUT_FILES]?: number })[WITHOUT_FILES] ?? 0;
        if (rest > this.plainLimit) {
          throw new DomainError(
            'payload_too_large',
            `request body exceeds ${this.plainLimit} bytes besides its file bytes (files: ${reader.limit - this.plainLimit} bytes more)`,
          );
        }
      }
    } catch (err) {
      throw this.refusal(err, req, reader.limit);
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

  private async readRpc(req: Request, res: Response, text: RequestHandler): Promise<void> {
    const contentType = req.headers['content-type'];
    if (contentType !== undefined) {
      const [type = '', ...params] = contentType.split(';');
      const charset = params
        .map((p) => p.trim().toLowerCase())
        .find((p) => p.startsWith('charset='))
        ?.slice('charset='.length)
        .replace(/^"|"$/g, '');
      if (
        !RPC_TYPES.has(type.trim().toLowerCase()) ||
        (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
      ) {
        throw new DomainError(
          'unsupported_media_type',
          `JSON-RPC requests must be sent as Content-Type: application/json (or application/a2a+json), UTF-8; got '${contentType.slice(0, 100)}'`,
        );
      }
    }
    await run(text, req, res);
  }

  /** A body-parser failure as the error the client gets. */
  private refusal(err: unknown, req: Request, limit: number): unknown {
    if (err instanceof DomainError) return err;
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
    if (e.type === 'entity.parse.failed') return new DomainError('invalid_json', 'request body is not valid JSON');
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
