import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { BodyAborted } from '../../common/http/read-body.js';
import { requestIdFor, JSONRPC_ROUTE, type RequestRecorder } from '../../common/http/request-record.js';
import { setHeaders, type HeaderList } from '../../common/http/security-headers.js';
import { safeError } from '../../common/safe-error.js';
import { AppConfig } from '../../config/app-config.js';
import { TenantGuard } from '../../tenants/auth/access.guard.js';
import { setHttpRoute } from '../../tracing/spans.js';
import { JsonRpcController } from '../jsonrpc/jsonrpc.controller.js';
import { RestController } from '../rest/rest.controller.js';
import { a2aTarget, decodeSegment, REST_ROUTE, splitTarget, type Target } from './a2a-target.js';
import { HttpExchange } from './exchange.js';
import { readRestBody, readRpcBody } from './request-bodies.js';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
/** An Express-style middleware (cors). */
type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

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
 * server CPU when this edge replaced it (README, "Benchmark"). Everything else (cards, the native API,
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
    private readonly jsonRpc: JsonRpcController,
    private readonly rest: RestController,
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
      body = await readRpcBody(x, this.config);
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
      body = await readRestBody(x, this.config);
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
