import 'reflect-metadata';
import { createServer } from 'node:net';
import { Logger } from '@nestjs/common';
import { earlyLogger } from './common/logging.js';
import { ConfigError, loadConfig, type AppConfig } from './config/app-config.js';
import { checkDatabase, StartupError } from './database/preflight.js';
import { stopTracing } from './tracing/sdk.js';

/**
 * Start-up failures, before the application's logger exists, and the lines the process exits right after: one
 * JSON line each, on stdout like every log, written before `process.exit` returns.
 */
const early = earlyLogger();

/** Known start-up conditions get one line that says what to do; anything else is a bug, logged with its stack. */
function reportStartFailure(err: unknown, port?: number): never {
  const code = (err as { code?: unknown }).code;
  if (err instanceof StartupError) {
    early.fatal(`arbiter cannot start: ${err.message}`);
  } else if (code === 'EADDRINUSE' || code === 'EACCES') {
    early.fatal(`arbiter cannot start: cannot listen on port ${port} (${String(code)}); set PORT or --port to another`);
  } else {
    early.fatal({ err }, 'arbiter failed to start');
  }
  process.exit(1);
}

/**
 * Whether the HTTP port can be listened on, before anything is created: a
 * server bound and closed at once (a port another process holds is refused
 * now, not after the embedded database and the admin token exist). Port 0
 * (any free port) needs no check.
 */
async function checkPort(config: AppConfig): Promise<void> {
  if (config.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ port: config.port, host: config.bind, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** The console's URL for a browser: the public base URL, else the listening address (a wildcard bind → localhost). */
async function consoleUrlOf(config: AppConfig, listening: string): Promise<string> {
  const { CONSOLE_PATH } = await import('./console/console.module.js');
  if (config.publicBaseUrl) return `${config.publicBaseUrl.replace(/\/+$/, '')}${CONSOLE_PATH}/`;
  const url = new URL(listening);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  return `${url.origin}${CONSOLE_PATH}/`;
}

async function main(): Promise<void> {
  const started = performance.now();
  let config: AppConfig;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    early.fatal({ problems: err.problems }, `arbiter: ${err.message.replace(/\n\s*/g, ' ')}`);
    process.exit(2);
  }
  let running;
  try {
    // The port first, then the database: a busy port or a wrong DATABASE_URL is one line, and neither an
    // embedded database nor an admin token is created before both are known to work.
    await checkPort(config);
    // The application is loaded only now: a refused setting is answered without loading it.
    const { startApp } = await import('./app.factory.js');
    await checkDatabase(config);
    running = await startApp(config);
  } catch (err) {
    reportStartFailure(err, config.port);
  }
  const logger = new Logger('Main');
  logger.log(
    { config: config.describe() },
    `listening on ${running.url}${running.grpcAddress ? ` and gRPC on ${running.grpcAddress}` : ''} (started in ${Math.round(performance.now() - started)} ms)`,
  );
  const consoleUrl = await consoleUrlOf(config, running.url);
  // Like the admin token on the first start: a plain line on a terminal, for the person who ran `npm start`;
  // a log line like every other when the output goes to a file or a collector.
  if (process.stdout.isTTY)
    process.stdout.write(`\nArbiter console: ${consoleUrl}  (sign in with the admin token)\n\n`);
  else logger.log({ console: consoleUrl }, `Arbiter console: ${consoleUrl} (sign in with the admin token)`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received; shutting down (grace ${config.shutdownGraceMs} ms)`);
    const deadline = setTimeout(() => {
      early.error({ context: 'Main' }, 'graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5_000);
    deadline.unref();
    running.close().then(
      // The last spans are flushed (when tracing is on) before the process goes.
      () => stopTracing().finally(() => process.exit(0)),
      (err: unknown) => {
        early.error({ context: 'Main', err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => reportStartFailure(err));
