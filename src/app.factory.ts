import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger, PinoLogger } from 'nestjs-pino';
import { AppModule, assignRequestId, loggerParams } from './app.module.js';
import type { AppConfig } from './config/app-config.js';
import { Lifecycle } from './health/lifecycle.service.js';

export interface RunningApp {
  app: INestApplication;
  url: string;
  /** Drops readiness, finishes in-flight requests (up to the grace period), closes the database. */
  close(): Promise<void>;
}

/**
 * The JSON logger for everything before the application's own: Nest's start-up
 * lines. A failed start is reported once, by the caller (see `main.ts`), so
 * Nest's own report of it is left out.
 */
class StartupLogger extends Logger {
  override error(message: unknown, ...params: unknown[]): void {
    if (params[params.length - 1] === 'ExceptionHandler') return;
    super.error(message, ...params);
  }
}

/** Builds and starts the HTTP server. Used by `main.ts` and by the end-to-end tests alike. */
export async function startApp(config: AppConfig): Promise<RunningApp> {
  const params = loggerParams(config);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    logger: new StartupLogger(new PinoLogger(params), params),
    // A failed start is an error for the caller to report, not a process.abort().
    abortOnError: false,
    bodyParser: false,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  // No hash of every JSON reply: the routes that revalidate (agent cards) set their own ETag.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.enableCors({
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
  // Runs before Nest's own middleware, so even a rejected body gets a request id.
  app.use(
    (req: Parameters<typeof assignRequestId>[0], res: Parameters<typeof assignRequestId>[1], next: () => void) => {
      assignRequestId(req, res);
      next();
    },
  );
  // Slow or withheld requests end: headers within ARBITER_HEADERS_TIMEOUT_MS, the whole request (body
  // included, never the response) within ARBITER_REQUEST_TIMEOUT_MS; idle keep-alive connections too. Node checks
  // these every `connectionsCheckingInterval` (30 s by default): check every second.
  const server = app.getHttpServer();
  server.headersTimeout = config.headersTimeoutMs;
  server.requestTimeout = config.requestTimeoutMs;
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1_000;
  await app.listen(config.port, config.bind);
  const addr = app.getHttpServer().address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const lifecycle = app.get(Lifecycle);
  let closing: Promise<void> | undefined;
  return {
    app,
    url: `http://${host}:${addr.port}`,
    close: () => {
      closing ??= (async () => {
        lifecycle.shuttingDown = true;
        await app.close();
      })();
      return closing;
    },
  };
}
