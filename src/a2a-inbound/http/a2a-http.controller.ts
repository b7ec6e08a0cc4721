import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError, asError } from '../../common/errors.js';
import { BodyAborted } from '../../common/http/read-body.js';
import { requestIdFor, JSONRPC_ROUTE, type RequestRecorder } from '../../common/http/request-record.js';
import { setHeaders, type HeaderList } from '../../common/http/security-headers.js';
import { safeError } from '../../common/safe-error.js';
import { AppConfig } from '../../config/app-config.js';
import { BearerGuard } from '../../tenants/auth/access.guard.js';
import { setHttpRoute } from '../../tracing/spans.js';
import { JsonRpcBinding } from '../jsonrpc/jsonrpc-binding.js';
import { RestBinding } from '../rest/rest-binding.js';
import { a2aTarget, decodeSegment, REST_ROUTE, splitTarget, type Target } from './a2a-target.js';
import { HttpExchange } from './exchange.js';
import { readRestBody, readRpcBody } from './request-bodies.js';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
/** An Express-style middleware (cors). */
type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export interface A2aHttpSetup {
  recorder: RequestRecorder;
  /** The security headers of every answer (helmet's, read once: see `captureHeaders`). */
  securityHeaders: HeaderList;
  /** The CORS middleware, when `ARBITER_CORS_ORIGINS` is set. */
  cors?: Middleware;
  /** Whether a proxy at this address (hop `i`) is trusted to say the client's protocol (Express's `trust proxy`). */
  trustProxy: (address: string, i: number) => boolean;
}

/**
 * The A2A HTTP controller — the design's JSON-RPC controller, and the
 * HTTP+JSON routes' under it: `POST /v1/a2a/agents/:id` and
 * `/v1/a2a/agents/:id/…`. A provider of `A2aInboundModule` that, when the
 * application starts, puts itself in front of the HTTP adapter's server
 * (Nest's Express): A2A requests are served here, the rest (cards, the
 * native API, admin, the console, docs) go on to Express and Nest's routes.
 *
 * Why not a Nest `@Controller`: Nest's per-request pipeline (router, guard
 * and interceptor chain) costs more CPU than the A2A call it carries — a
 * blocking `SendMessage` at c=64 went from 678 to 212 µs of server CPU when
 * this replaced the Nest routes, and a route-scoped `@Controller` prototype
 * still costs more than the 15% allowed (docs/benchmark.md).
 *
 * It keeps the pipeline's rules: the security headers and request id on
 * every answer, CORS when configured, one log line and the metrics per
 * request, the bearer checked by the bearer guard (`BearerGuard`, the Nest
 * guard of every tenant route) before a byte of the body is read — an
 * `Expect: 100-continue` client is invited to send its body only then —,
 * the body limits and media types, and each binding's error shape; then
 * the request goes to its binding (`JsonRpcBinding`, `RestBinding`).
 */
@Injectable()
export class A2aHttpController implements OnApplicationBootstrap {
  private readonly logger = new Logger('A2A');
  private setup: A2aHttpSetup | undefined;
  private fixed: string[] = [];
  private installed = false;

  constructor(
    private readonly guard: BearerGuard,
    private readonly jsonRpc: JsonRpcBinding,
    private readonly rest: RestBinding,
    private readonly config: AppConfig,
    private readonly adapter: HttpAdapterHost,
  ) {}

  /** What the A2A routes share with every other route (`startApp` builds them): set before the application starts. */
  configure(setup: A2aHttpSetup): void {
    this.setup = setup;
    this.fixed = setup.securityHeaders.flatMap(([k, v]) => [k, v]);
  }

  /** Registers the routes on the HTTP adapter's server; an application without HTTP (or not configured) has none. */
  onApplicationBootstrap(): void {
    const server = this.adapter.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server || !this.setup || this.installed) return;
    this.installed = true;
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
    // `Expect: 100-continue`: Node would invite the body before anyone looked at the bearer; the guard runs first.
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
    setup.recorder.track(req, res, id, target.kind === 'jsonrpc' ? jsonRpcRoute : restRoute);
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

  /**
   * A JSON-RPC call: its bearer, then its body, then the call. Reactions on the two waits rather than an async
   * function (every call comes this way: a frame and two awaits each); a failure is a rejection, never a throw.
   */
  private jsonRpcCall(x: HttpExchange, encodedAgent: string): Promise<void> {
    try {
      const known = this.authenticate(x, (err) => this.jsonRpc.refuse(x, err));
      return known instanceof Promise
        ? known.then((principal) => this.jsonRpcAs(x, encodedAgent, principal))
        : this.jsonRpcAs(x, encodedAgent, known);
    } catch (err) {
      return Promise.reject(asError(err));
    }
  }

  /** The call once its bearer is known (undefined: refused, and answered so). */
  private jsonRpcAs(x: HttpExchange, encodedAgent: string, principal: TenantPrincipal | undefined): Promise<void> {
    if (!principal) return ANSWERED;
    if (x.req.method !== 'POST') {
      // Any other method: authenticated like every tenant route first, then 405.
      x.header('Allow', 'POST');
      x.closeIfUnread();
      x.json(405, { error: 'use POST for JSON-RPC requests', code: 'method_not_allowed' });
      return ANSWERED;
    }
    const agent = decodeSegment(encodedAgent);
    const unread = (err: unknown): void => {
      if (err instanceof BodyAborted) return;
      this.bodyRefused(x, err);
      this.jsonRpc.refuse(x, err);
    };
    if (agent === null) {
      unread(malformedPath());
      return ANSWERED;
    }
    return readRpcBody(x, this.config).then((body) => this.jsonRpc.serve(x, principal, agent, body), unread);
  }

  private async restCall(x: HttpExchange, target: Extract<Target, { kind: 'rest' }>): Promise<void> {
    const known = this.authenticate(x, (err) => this.rest.refuse(x, err));
    const principal = known instanceof Promise ? await known : known;
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

  /** A body this controller would not take, for the operator (what the client sent is never logged). */
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

  /**
   * The tenant of the request's bearer, or undefined once `refuse` has answered (401, 403, 503): at once when the
   * token was verified lately (most requests), else a promise.
   */
  private authenticate(
    x: HttpExchange,
    refuse: (err: unknown) => void,
  ): TenantPrincipal | undefined | Promise<TenantPrincipal | undefined> {
    const refused = (err: unknown): undefined => {
      refuse(err);
      return undefined;
    };
    try {
      const principal = this.guard.tenantOf(x.req.headers.authorization);
      return principal instanceof Promise ? principal.catch(refused) : principal;
    } catch (err) {
      return refused(err);
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

/** The route templates for the recorder: the same function every request, not a closure each. */
const jsonRpcRoute = (): string => JSONRPC_ROUTE;
/** What a call that has been answered without waiting returns. */
const ANSWERED: Promise<void> = Promise.resolve();
const restRoute = (): string => REST_ROUTE;

const malformedPath = (): DomainError =>
  new DomainError('validation_failed', 'the request path could not be decoded (malformed percent-encoding)', [
    { field: 'path', messages: ['has a malformed percent-encoding'] },
  ]);
