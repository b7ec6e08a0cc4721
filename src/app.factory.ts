import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import cors from 'cors';
import helmet from 'helmet';
import { AppModule } from './app.module.js';
import { A2aHttpController } from './a2a-inbound/http/a2a-http.controller.js';
import { RequestRecorder } from './common/http/request-record.js';
import { captureHeaders, setHeaders } from './common/http/security-headers.js';
import { NestPino, rootLogger } from './common/logging.js';
import type { AppConfig } from './config/app-config.js';
import { Lifecycle } from './health/lifecycle.service.js';
import { GrpcEndpoint } from './a2a-inbound/grpc/grpc-endpoint.js';
import { buildOpenApi, serveOpenApi } from './openapi/openapi.js';
import { StatsRecorder } from './stats/stats-recorder.service.js';
import { Metrics } from './metrics/metrics.service.js';
import { ARBITER_VERSION } from './version.js';

export interface RunningApp {
  app: INestApplication;
  url: string;
  /** The gRPC binding's address (`host:port`), when `ARBITER_GRPC_PORT` is set. */
  grpcAddress?: string;
  /** Drops readiness, finishes in-flight requests (up to the grace period), closes the database, writes out the log. */
  close(): Promise<void>;
}

/** Builds and starts the HTTP server. Used by `main.ts` and by the end-to-end tests alike. */
/**
 * The security headers of every answer that is data (JSON, server-sent events), as for an HTTP API: no sniffing,
 * no framing (`frame-ancestors 'none'` and `X-Frame-Options: DENY`), a CSP that lets nothing load, no referrer,
 * no cross-origin embedding, HSTS (browsers act on it over TLS only). helmet's other headers govern what a browser
 * does with a page it renders (a document's opener, agent cluster, DNS prefetching, the legacy XSS auditor, an old
 * download dialog, Flash and PDF policy files): a JSON answer is never one, so they would be bytes on every answer
 * and nothing else. Pages (the console, the docs) keep helmet's defaults, with their own CSPs.
 */
const API_HEADERS: Parameters<typeof helmet>[0] = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xXssProtection: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
};

export async function startApp(config: AppConfig): Promise<RunningApp> {
  const logger = rootLogger(config.logLevel, config.logFormat);
  // The gRPC binding (spec §10), with gRPC, protobuf and Nest's microservices, is loaded only when it serves.
  const grpcBinding = config.grpcPort === undefined ? undefined : await import('./a2a-inbound/grpc/grpc.module.js');
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config, grpcBinding ? [grpcBinding.GrpcModule] : []),
    {
      // A failed start is reported once, by the caller (see `main.ts`): Nest's own report of it is left out.
      logger: new NestPino(logger, new Set(['ExceptionHandler'])),
      // A failed start is an error for the caller to report, not a process.abort().
      abortOnError: false,
      bodyParser: false,
    },
  );
  app.disable('x-powered-by');
  // No hash of every JSON reply: the routes that revalidate (agent cards) set their own ETag.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  // helmet's headers depend on its options only: read once, set on every answer.
  const api = captureHeaders(helmet(API_HEADERS));
  // The docs page (Swagger UI, served from this origin) is a document: helmet's defaults, with its inline styles and
  // the data: images of its theme.
  const docs = captureHeaders(
    helmet({
      contentSecurityPolicy: {
        directives: {
          'style-src': ["'self'", "'unsafe-inline'"],
          'img-src': ["'self'", 'data:'],
          'upgrade-insecure-requests': null,
        },
      },
    }),
  );
  app.use((req: Request, res: Response, next: NextFunction) => {
    setHeaders(res, req.path === '/docs' || req.path.startsWith('/docs/') ? docs : api);
    next();
  });
  const origins = config.corsOrigins ? config.corsOrigins.split(',') : [];
  let corsMiddleware: ReturnType<typeof cors> | undefined;
  if (origins.length > 0) {
    corsMiddleware = cors({
      origin: origins.includes('*') ? '*' : origins,
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'A2A-Version',
        'A2A-Extensions',
        'X-Request-Id',
        'Idempotency-Key',
        'If-None-Match',
        'Last-Event-ID',
      ],
      exposedHeaders: ['X-Request-Id', 'ETag', 'WWW-Authenticate'],
      maxAge: 600,
    });
    app.use(corsMiddleware);
  }
  // Runs before Nest's own middleware, so even a rejected body gets a request id, a log line and its count.
  const recorder = new RequestRecorder(
    logger,
    app.get(Metrics),
    (url) => url.startsWith('/v1/health'),
    app.get(StatsRecorder),
  );
  app.use(recorder.middleware());
  // The A2A routes (A2aHttpController) share these with every route; the controller registers itself on start.
  const express = app.getHttpAdapter().getInstance() as { get(setting: string): unknown };
  app.get(A2aHttpController).configure({
    recorder,
    securityHeaders: api,
    cors: corsMiddleware,
    trustProxy: express.get('trust proxy fn') as (address: string, i: number) => boolean,
  });
  // Slow or withheld requests end: headers within ARBITER_HEADERS_TIMEOUT_MS, the whole request (body
  // included, never the response) within ARBITER_REQUEST_TIMEOUT_MS; idle keep-alive connections too. Node checks
  // these every `connectionsCheckingInterval` (30 s by default): check every second.
  const server = app.getHttpServer();
  server.headersTimeout = config.headersTimeoutMs;
  server.requestTimeout = config.requestTimeoutMs;
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1_000;
  // Built when first asked for (then kept): most starts, a test server's or a replica's, never serve it, and
  // reading every route and DTO took 60 to 110 ms of each start's CPU.
  serveOpenApi(app, () => buildOpenApi(app, ARBITER_VERSION));
  // The gRPC binding (spec §10): a second transport of the same application, closed by app.close().
  const grpc = grpcBinding ? new grpcBinding.A2aGrpcServer(config) : undefined;
  if (grpc) {
    app.connectMicroservice({ strategy: grpc });
    await app.startAllMicroservices();
    app.get(GrpcEndpoint).port = grpc.port;
  }
  await app.listen(config.port, config.bind);
  const addr = app.getHttpServer().address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const lifecycle = app.get(Lifecycle);
  let closing: Promise<void> | undefined;
  return {
    app,
    url: `http://${host}:${addr.port}`,
    ...(grpc?.port !== undefined ? { grpcAddress: `${host}:${grpc.port}` } : {}),
    close: () => {
      closing ??= (async () => {
        lifecycle.shuttingDown = true;
        await app.close();
        // The last lines (the shutdown's own) are on stdout before the caller may exit the process.
        await new Promise<void>((resolve) => logger.flush(() => resolve()));
      })();
      return closing;
    },
  };
}
