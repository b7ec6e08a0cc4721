import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule, assignRequestId } from './app.module.js';
import type { AppConfig } from './config/app-config.js';
import { jsonBodyMiddleware } from './common/body-parsing.js';
import { Lifecycle } from './health/lifecycle.service.js';

export interface RunningApp {
  app: INestApplication;
  url: string;
  /** Drops readiness, finishes in-flight requests (up to the grace period), closes the database. */
  close(): Promise<void>;
}

/** Builds and starts the HTTP server. Used by `main.ts` and by the end-to-end tests alike. */
export async function startApp(config: AppConfig): Promise<RunningApp> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bufferLogs: true,
    bodyParser: false,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
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
  app.use(...jsonBodyMiddleware(config.maxBodyBytes, /^\/v1\/a2a\/agents\/[^/]+\/?$/));
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
