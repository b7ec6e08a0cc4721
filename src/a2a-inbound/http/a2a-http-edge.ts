import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { findJsonProblem, type JsonTextError, parseJsonText, scanJson } from '../../common/json-guard.js';
import { checkScanBesidesFiles } from './body-size.js';
import {
  BodyAborted,
  bodyProblem,
  hasBody,
  isJsonType,
  isUtf8,
  mediaTypeOf,
  readBody,
} from '../../common/http/read-body.js';
import { requestIdFor, JSONRPC_ROUTE, type RequestRecorder } from '../../common/http/request-record.js';
import { setHeaders, type HeaderList } from '../../common/http/security-headers.js';
import { safeError } from '../../common/safe-error.js';
import { AppConfig } from '../../config/app-config.js';
import { TenantGuard } from '../../tenants/auth/access.guard.js';
import { setHttpRoute } from '../../tracing/spans.js';
import { JsonRpcHttp } from '../jsonrpc/jsonrpc-http.js';
import { RestHttp } from '../rest/rest-http.js';
import { HttpExchange } from './exchange.js';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
/** An Express-style middleware (cors). */
type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The route template of the HTTP+JSON binding, for metrics and traces (as Express named it). */
export const REST_ROUTE = '/v1/a2a/agents/:id/*path';

const PREFIX = '/v1/a2a/agents/';
/** Paths under an agent's URL that are its card (served by Nest's card controller), lower case. */
const CARD_PATHS = new Set(['agent-card.json', '.well-known/agent-card.json', '.well-known/agent.json']);

/** A request of the A2A bindings, by the path: the agent's id (still encoded), and the rest for HTTP+JSON. */
type Target = { kind: 'jsonrpc'; agent: string } | { kind: 'rest'; agent: string; sub: string };

/**
 * Which binding a request is for, or undefined for the routes Nest serves.
 * Like Express's routing here: the prefix is matched without regard to case,
 * a trailing slash after the agent's id is the JSON-RPC endpoint still, and
 * a card's path (with or without a trailing slash) goes to Nest's card route
 * for GET and HEAD — any other method on it is an HTTP+JSON request (a 401,
 * or §11.6's 404 for a route that does not exist).
 */
export function a2aTarget(path: string, method = 'GET'): Target | undefined {
  if (path.length <= PREFIX.length || path.slice(0, PREFIX.length).toLowerCase() !== PREFIX) return undefined;
  const slash = path.indexOf('/', PREFIX.length);
  const agent = path.slice(PREFIX.length, slash === -1 ? undefined : slash);
  if (agent === '') return undefined;
  if (slash === -1 || slash === path.length - 1) return { kind: 'jsonrpc', agent };
  const sub = path.slice(slash + 1);
  const card = (sub.endsWith('/') ? sub.slice(0, -1) : sub).toLowerCase();
  if (CARD_PATHS.has(card) && (method === 'GET' || method === 'HEAD')) return undefined;
  return { kind: 'rest', agent, sub };
}

/**
 * A request target's path and query, as Express reads it: an absolute-form
 * target (`http://host/path`, RFC 9112 §3.2.2) is taken by its path, and a
 * `#fragment` a client sent is dropped.
 */
export function splitTarget(url: string): { path: string; search: string } {
  let target = url;
  const hash = target.indexOf('#');
  if (hash !== -1) target = target.slice(0, hash);
  if (target[0] !== '/') {
    try {
      const u = new URL(target);
      return { path: u.pathname, search: u.search.slice(1) };
    } catch {
      return { path: target, search: '' };
    }
  }
  const q = target.indexOf('?');
  return q === -1 ? { path: target, search: '' } : { path: target.slice(0, q), search: target.slice(q + 1) };
}

/** Decodes a path segment; null when its percent-encoding is malformed. */
function decodeSegment(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

export interface EdgeSetup {
  recorder: RequestRecorder;
  /** The security headers of every answer (helmet's, read once: see `captureHeaders`). */
  securityHeaders: HeaderList;
  /** The CORS middleware, when `ARBITER_CORS_ORIGINS` is set. */
  cors?: Middleware;
  /** Whether a proxy at this address (hop `i`) is trusted to say the client's protocol (Express's `trust proxy`). */
  trustProxy: (address: string, i: number) => boolean;
}

/**
 * The A2A HTTP edge: the JSON-RPC endpoint (`POST /v1/a2a/agents/:id`) and
 * the HTTP+JSON binding under it are served straight from Node's HTTP
 * server, ahead of Express and Nest's per-request pipeline (router, guard,
 * interceptors, filters), which cost more CPU than the whole A2A call it
 * carried: a blocking `SendMessage` at c=64 went from 678 to 212 µs of
 * server CPU when this edge replaced it (docs/benchmark.md). Everything else (cards, the native API,
 * admin, the console, docs) stays with Nest.
 *
 * The edge keeps the pipeline's rules: the security headers and request id
 * on every answer, CORS when configured, one log line and the metrics per
 * request, the bearer checked through the same guard as every tenant route
 * (passport-http-bearer, as the gRPC binding does) before a byte of the body
 * is read, the body limits and media types, and each binding's error shape.
 */
@Injectable()
export class A2aHttpEdge {
  private readonly logger = new Logger('A2A');
  private setup: EdgeSetup | undefined;
  private fixed: string[] = [];

  constructor(
    private readonly guard: TenantGuard,
    private readonly jsonRpc: JsonRpcHttp,
    private readonly rest: RestHttp,
    private readonly config: AppConfig,
  ) {}

  /** Puts the edge in front of `server`'s request listener (Express): A2A requests here, the rest there. */
  install(server: Server, setup: EdgeSetup): void {
    this.setup = setup;
    this.fixed = setup.securityHeaders.flatMap(([k, v]) => [k, v]);
    const listeners = server.listeners('request') as Listener[];
    if (listeners.length !== 1) throw new Error(`expected one request listener (Express), found ${listeners.length}`);
    const [fallback] = listeners as [Listener];
    server.removeAllListeners('request');
    const dispatch = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void => {
      const { path, search } = splitTarget(req.url ?? '/');
      const target = a2aTarget(path, req.method);
      if (target) return this.serve(req, res, target, path, search, expectsContinue);
      if (expectsContinue) res.writeContinue();
      fallback(req, res);
    };
    server.on('request', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, false));
    // `Expect: 100-continue`: Node would invite the body before anyone looked at the bearer; the edge checks it first.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => dispatch(req, res, true));
  }

  private serve(
    req: IncomingMessage,
    res: ServerResponse,
    target: Target,
    path: string,
    search: string,
    expectsContinue: boolean,
  ): void {
    const setup = this.setup!;
    const id = requestIdFor(req);
    const route = target.kind === 'jsonrpc' ? JSONRPC_ROUTE : REST_ROUTE;
    setup.recorder.track(req, res, id, () => route);
    setHttpRoute(route);
    const x = new HttpExchange(req, res, id, path, search, this.protocolOf(req), this.fixed, expectsContinue);
    const run = (): void => {
      const done = target.kind === 'jsonrpc' ? this.jsonRpcCall(x, target.agent) : this.restCall(x, target);
      done.catch((err: unknown) => {
        // Every path answers its own errors; this is a last resort (a bug), never an unhandled rejection.
        this.logger.error({ err: safeError(err), request_id: id }, 'A2A request failed unexpectedly');
        if (x.open) x.refuse(err);
        else if (!res.writableEnded) res.destroy();
      });
    };
    if (!setup.cors) return run();
    if (req.method === 'OPTIONS') {
      // A preflight is answered by the CORS middleware itself: it carries the headers of every answer too.
      setHeaders(res, setup.securityHeaders);
      res.setHeader('X-Request-Id', id);
    }
    setup.cors(req, res, (err) => (err ? x.refuse(err) : run()));
  }

  private async jsonRpcCall(x: HttpExchange, encodedAgent: string): Promise<void> {
    if (x.req.method !== 'POST') {
      // Any other method: authenticated like every tenant route first, then 405.
      const principal = await this.authenticate(x, (err) => this.jsonRpc.refuse(x, err));
      if (!principal) return;
      x.header('Allow', 'POST');
      x.closeIfUnread();
      x.json(405, { error: 'use POST for JSON-RPC requests', code: 'method_not_allowed' });
      return;
    }
    const principal = await this.authenticate(x, (err) => this.jsonRpc.refuse(x, err));
    if (!principal) return;
    const agent = decodeSegment(encodedAgent);
    let body: string;
    try {
      if (agent === null) throw malformedPath();
      body = await this.readRpcBody(x);
    } catch (err) {
      if (err instanceof BodyAborted) return;
      this.bodyRefused(x, err);
      this.jsonRpc.refuse(x, err);
      return;
    }
    await this.jsonRpc.serve(x, principal, agent, body);
  }

  private async restCall(x: HttpExchange, target: Extract<Target, { kind: 'rest' }>): Promise<void> {
    const principal = await this.authenticate(x, (err) => this.rest.refuse(x, err));
    if (!principal) return;
    const agent = decodeSegment(target.agent);
    let body: unknown;
    try {
      if (agent === null || decodeSegment(target.sub) === null) throw malformedPath();
      body = await this.readRestBody(x);
    } catch (err) {
      if (err instanceof BodyAborted) return;
      this.bodyRefused(x, err);
      this.rest.refuse(x, err);
      return;
    }
    await this.rest.serve(x, principal, agent, target.sub, body);
  }

  /** A body the edge would not take, for the operator (what the client sent is never logged). */
  private bodyRefused(x: HttpExchange, err: unknown): void {
    this.logger.warn(
      {
        request_id: x.id,
        method: x.req.method,
        url: x.path,
        reason: err instanceof DomainError ? err.code : 'error',
      },
      'request body refused',
    );
  }

  /** The tenant of the request's bearer, or undefined once `refuse` has answered (401, 403, 503). */
  private async authenticate(x: HttpExchange, refuse: (err: unknown) => void): Promise<TenantPrincipal | undefined> {
    try {
      const principal = await this.guard.principalOf(x.req.headers.authorization);
      if ('tenantId' in principal) return principal;
      throw new DomainError('forbidden', 'this route needs a tenant token (atr_…)');
    } catch (err) {
      refuse(err);
      return undefined;
    }
  }

  /**
   * JSON-RPC's body as text (a malformed one is a JSON-RPC parse error, not
   * an HTTP 400): `application/json`, `application/a2a+json` or no media
   * type, UTF-8.
   */
  private async readRpcBody(x: HttpExchange): Promise<string> {
    const header = x.req.headers['content-type'];
    if (header !== undefined) {
      const media = mediaTypeOf(header);
      if (
        !media ||
        (media.type !== 'application/json' && media.type !== 'application/a2a+json') ||
        !isUtf8(media.charset)
      ) {
        throw new DomainError(
          'unsupported_media_type',
          `JSON-RPC requests must be sent as Content-Type: application/json (or application/a2a+json), UTF-8; got '${header.slice(0, 100)}'`,
        );
      }
    }
    x.continue();
    const { text, bytes } = await readBody(x.req, this.config.a2aBodyBytes);
    x.bodyBytes = bytes;
    x.bodyScan = scanJson(text);
    checkScanBesidesFiles(bytes, x.bodyScan, this.config);
    return text;
  }

  /** HTTP+JSON's body, parsed: a JSON object or array (UTF-8), when the request has one. */
  private async readRestBody(x: HttpExchange): Promise<unknown> {
    if (!hasBody(x.req)) return undefined;
    const media = mediaTypeOf(x.req.headers['content-type'] ?? '');
    if (!media || !isJsonType(media.type) || !isUtf8(media.charset)) {
      throw new DomainError('unsupported_media_type', 'request bodies must be JSON (Content-Type: application/json)');
    }
    x.continue();
    const { text, bytes } = await readBody(x.req, this.config.a2aBodyBytes);
    x.bodyBytes = bytes;
    const scan = scanJson(text);
    checkScanBesidesFiles(bytes, scan, this.config);
    const first = /\S/.exec(text)?.[0];
    if (first === undefined) return undefined;
    if (first !== '{' && first !== '[') {
      throw new DomainError('invalid_json', 'request body is not valid JSON: it must be an object or an array');
    }
    let body: unknown;
    try {
      body = parseJsonText(text, { scan });
    } catch (err) {
      throw bodyProblem(err as JsonTextError);
    }
    const problem = findJsonProblem(body);
    if (problem) {
      throw DomainError.validation(
        [{ field: problem.path.replace(/^body\.?/, '') || 'body', messages: [problem.problem] }],
        `${problem.path} ${problem.problem}`,
      );
    }
    return body;
  }

  /** `http` or `https` as the client reached us: a trusted proxy's `X-Forwarded-Proto`, else the socket's. */
  private protocolOf(req: IncomingMessage): string {
    const own = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
    const forwarded = req.headers['x-forwarded-proto'];
    if (typeof forwarded !== 'string' || !this.setup!.trustProxy(req.socket.remoteAddress ?? '', 0)) return own;
    const comma = forwarded.indexOf(',');
    const proto = (comma === -1 ? forwarded : forwarded.slice(0, comma)).trim().toLowerCase();
    // Only a scheme a card's URL may carry; anything else a proxy passes on is ignored.
    return proto === 'http' || proto === 'https' ? proto : own;
  }
}

const malformedPath = (): DomainError =>
  new DomainError('validation_failed', 'the request path could not be decoded (malformed percent-encoding)', [
    { field: 'path', messages: ['has a malformed percent-encoding'] },
  ]);
