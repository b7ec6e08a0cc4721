import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { requestLog } from '../../common/logging.js';
import { toErrorResponse, BEARER_CHALLENGE, scopeChallenge } from '../../common/http-exception.filter.js';
import { Logger } from '@nestjs/common';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import type { JsonScan } from '../../common/json-guard.js';

const logger = new Logger('A2A');

/** Query parameters as Express's simple parser gives them: a string, or an array when repeated. */
export type Query = Record<string, string | string[] | undefined>;

/**
 * One request on the A2A HTTP controller and its answer, written straight to
 * Node's response: every answer carries the controller's fixed headers (security
 * headers, the request id) plus those added here, in one `writeHead`.
 */
export class HttpExchange {
  /** Extra response headers, as `name, value, name, value …`. */
  private readonly extra: string[] = [];
  /** The size of the request's body as read (decoded), for the limit besides file bytes (see `checkBesidesFiles`). */
  bodyBytes = 0;
  /** What the controller's scan of a JSON body found before parsing (so it is scanned once). */
  bodyScan: JsonScan | undefined;
  private parsedQuery: Query | undefined;

  constructor(
    readonly req: IncomingMessage & { id?: unknown },
    readonly res: ServerResponse,
    /** The request id (echoed as `X-Request-Id`). */
    readonly id: string,
    /** The path, still percent-encoded, and the query string after `?` ('' when none). */
    readonly path: string,
    private readonly search: string,
    /** `http` or `https`, as the client reached us (X-Forwarded-Proto from a trusted proxy). */
    readonly protocol: string,
    /** The headers of every answer (`name, value …`), shared by all requests; the request id is added. */
    private readonly fixed: readonly string[],
    /** The client sent `Expect: 100-continue` and waits for an invitation before its body. */
    private expectsContinue = false,
  ) {}

  /** Invites the body of a client that asked first (`Expect: 100-continue`); the bearer has been accepted by now. */
  continue(): void {
    if (!this.expectsContinue) return;
    this.expectsContinue = false;
    this.res.writeContinue();
  }

  get query(): Query {
    return (this.parsedQuery ??= this.search === '' ? {} : parseQuery(this.search));
  }

  /** The fields of this request's log line (see `requestLog`). */
  get log(): Record<string, unknown> {
    return requestLog(this.res);
  }

  /** Whether an answer can still be written. */
  get open(): boolean {
    return !this.res.headersSent && !this.res.writableEnded && !this.res.destroyed;
  }

  header(name: string, value: string): void {
    this.extra.push(name, value);
  }

  /** The response headers so far (fixed, the request id, then added), for `writeHead`; a new array the caller may extend. */
  headers(): string[] {
    const out = this.fixed.slice();
    out.push('X-Request-Id', this.id);
    for (const h of this.extra) out.push(h);
    return out;
  }

  /**
   * Writes a complete answer, unless one has begun. The body goes as bytes: given a string, Node would join
   * the head to it and copy the two into one flat string on the heap, on top of the copy measuring it makes.
   */
  send(status: number, contentType: string, body: string): void {
    if (!this.open) return;
    const bytes = Buffer.from(body);
    const headers = this.headers();
    headers.push('Content-Type', contentType, 'Content-Length', String(bytes.length));
    this.res.writeHead(status, headers);
    this.res.end(bytes);
  }

  /** An answer without a body (204, 304 …). */
  empty(status: number): void {
    if (!this.open) return;
    this.res.writeHead(status, this.headers());
    this.res.end();
  }

  json(status: number, value: unknown): void {
    this.send(status, 'application/json; charset=utf-8', JSON.stringify(value));
  }

  /**
   * A refusal in the application's error shape (`{error, code, request_id}`,
   * as every non-A2A route answers): `WWW-Authenticate` on a 401,
   * `Retry-After` on a 503 or a rate limit, and the connection closed when
   * the request's body was never read.
   */
  refuse(err: unknown): void {
    const { status, body } = toErrorResponse(err, this.id);
    if (status === 503) logger.warn({ request_id: this.id }, body.error);
    else if (status >= 500) logger.error({ err: safeError(err), request_id: this.id }, 'unhandled error');
    if (err instanceof DomainError && err.retryAfterSeconds !== undefined) {
      this.header('Retry-After', String(err.retryAfterSeconds));
    } else if (status === 503) this.header('Retry-After', '1');
    if (status === 401) this.header('WWW-Authenticate', BEARER_CHALLENGE);
    if (body.required_scopes) this.header('WWW-Authenticate', scopeChallenge(body.required_scopes));
    this.closeIfUnread();
    this.json(status, body);
  }

  /** Refused before its body was read: close the connection after the answer rather than read what is still coming. */
  closeIfUnread(): void {
    if (!this.req.complete) this.header('Connection', 'close');
  }
}
