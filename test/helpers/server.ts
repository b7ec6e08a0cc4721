import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type RunningApp } from '../../src/app.factory.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { freshDatabase, seedEmbeddedDatabase, type TestDatabase } from './database.js';
import { HttpClient } from './http.js';

export interface TestServer {
  url: string;
  /** The gRPC binding's `host:port`, when the test set `ARBITER_GRPC_PORT` (use `GRPC_ON`). */
  grpcAddress?: string;
  home: string;
  config: AppConfig;
  adminToken: string;
  running: RunningApp;
  /** Plain HTTP client with no credentials. */
  http: HttpClient;
  /** HTTP client carrying the admin token. */
  admin: HttpClient;
  as(token: string): HttpClient;
  close(): Promise<void>;
}

/** The env that turns the gRPC binding on, on a port the system picks. */
export const GRPC_ON = { ARBITER_GRPC_PORT: '0' } as const;

/** A closed port on loopback (discard): a provider nobody pointed anywhere fails fast, on this machine. */
const NOWHERE = 'http://127.0.0.1:9';

/**
 * Tests never send traffic off this machine: every provider base URL a test
 * leaves unset points at `NOWHERE` instead of the provider's public host.
 * (`OPENAI_BASE_URL` alone enables OpenAI, so it is only filled in when a
 * test sets a key without it.)
 */
export function withLoopbackProviders(env: Record<string, string>): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: NOWHERE,
    OPENROUTER_BASE_URL: `${NOWHERE}/v1`,
    BRAVE_SEARCH_BASE_URL: NOWHERE,
    TAVILY_BASE_URL: NOWHERE,
    ...(env.OPENAI_API_KEY && !env.OPENAI_BASE_URL ? { OPENAI_BASE_URL: `${NOWHERE}/v1` } : {}),
    ...env,
  };
}

export function tempHome(): string {
  return mkdtempSync(join(tmpdir(), 'arbiter-test-'));
}

/**
 * Starts the real app on a loopback port with its own database and home.
 * `prepareHome` runs before boot (e.g. to drop agent files in place).
 */
export async function startTestServer(
  opts: { env?: Record<string, string>; prepareHome?: (home: string) => void; home?: string; db?: TestDatabase } = {},
): Promise<TestServer> {
  const home = opts.home ?? tempHome();
  opts.prepareHome?.(home);
  const db = opts.db ?? (await freshDatabase());
  if (!db.url) seedEmbeddedDatabase(home);
  const adminToken = `adm_${randomBytes(24).toString('hex')}`;
  const env: Record<string, string> = {
    ARBITER_HOME: home,
    ARBITER_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    BIND: '127.0.0.1',
    // Runs a test leaves in flight (held tasks) end at close at once, not after the default 10 s of grace;
    // a test of the grace period sets its own.
    ARBITER_SHUTDOWN_GRACE_MS: '0',
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    ...opts.env,
  };
  let config: AppConfig;
  let running: RunningApp;
  try {
    config = loadConfig(withLoopbackProviders(env));
    running = await startApp(config);
  } catch (err) {
    // A start that fails (some tests expect it to) leaves nothing behind that this helper made.
    // (The start's error is the one the caller sees, even if the drop fails too.)
    if (!opts.db) await db.drop().catch(() => undefined);
    if (!opts.home) rmSync(home, { recursive: true, force: true });
    throw err;
  }
  const httpServer = running.app.getHttpServer() as Server;
  const unused = unusedConnections(httpServer);
  const http = new HttpClient(running.url);
  return {
    url: running.url,
    grpcAddress: running.grpcAddress,
    home,
    config,
    adminToken: config.adminToken ?? adminToken,
    running,
    http,
    admin: http.withToken(config.adminToken ?? adminToken),
    as: (token) => http.withToken(token),
    close: async () => {
      // While the app closes, connections the test's client keeps open but idle are ended as soon as they are
      // idle: the server's close ends only those idle at its start, and fetch keeps the rest for 4 s.
      const sweep = (): void => {
        httpServer.closeIdleConnections();
        for (const socket of unused) socket.destroy();
      };
      const sweeper = setInterval(sweep, 50);
      try {
        const closing = running.close();
        sweep();
        await closing;
      } finally {
        clearInterval(sweeper);
      }
      if (!opts.db) await db.drop();
      if (!opts.home) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Connections the test's HTTP client opened and never sent a request on (fetch opens one when a response is aborted). */
function unusedConnections(server: Server): Set<Socket> {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (req: IncomingMessage) => unused.delete(req.socket));
  return unused;
}
