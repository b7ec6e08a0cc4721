import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { startApp } from './app.factory.js';
import { ConfigError, loadConfig, type AppConfig } from './config/app-config.js';

async function main(): Promise<void> {
  const started = performance.now();
  let config: AppConfig;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`arbiter: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const running = await startApp(config);
  const logger = new Logger('Main');
  logger.log(
    { config: config.describe() },
    `listening on ${running.url} (started in ${Math.round(performance.now() - started)} ms)`,
  );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received; shutting down (grace ${config.shutdownGraceMs} ms)`);
    const deadline = setTimeout(() => {
      logger.error('graceful shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5_000);
    deadline.unref();
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `arbiter: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
