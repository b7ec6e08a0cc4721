/**
 * Starting and stopping the servers `npm run bench` measures: the bare
 * `node:http` reference, the SDK reference (in-memory or durable store),
 * Arbiter replicas and Arbiter as a gateway in front of the SDK, each a child
 * process of its own, plus the PostgreSQL databases they use. Everything
 * started here is registered, so `cleanup()` can stop it and drop the
 * databases on failure or SIGINT too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const ECHO_ENV = { ARBITER_ECHO_CHUNKS: '4', ARBITER_ECHO_DELAY_MS: '0' };
/**
 * Node's flags for Arbiter, as `npm start` and the image run it (docs/operating.md): the replicas measured here run
 * the way users run them. The reference servers run with Node's defaults, as their own documentation shows.
 */
export const ARBITER_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

export interface Target {
  name: string;
  /** One per process; requests alternate between them. */
  endpoints: string[];
  headers: Record<string, string>;
  /** Server processes whose CPU time is this target's. */
  pids: number[];
  /** The PostgreSQL database it uses, if any (its backends' CPU is read too). */
  database?: string;
  /** When `pids` are processes of different kinds (a gateway and its upstream): which are which. */
  parts?: { label: string; pids: number[] }[];
  stop: () => Promise<void>;
}

const children = new Set<ChildProcess>();
const homes = new Set<string>();
const databases = new Set<string>();
/** Servers running in this process (the local identity provider): closed by `cleanup()` too, or it never exits. */
const inProcess = new Set<{ close: () => Promise<void> }>();

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

let allocDir: string | undefined;
/** A program every server runs under from now on (`npm run bench:instructions`: callgrind), with its arguments. */
let wrapper: string[] = [];

/** From now on every server started runs under `command` (its process id stays the server's: valgrind execs it). */
export function runUnder(command: string[]): void {
  wrapper = command;
}

/** How much longer than normal a server may take to start: much longer under a wrapper such as valgrind. */
const startFactor = (): number => (wrapper.length ? 10 : 1);

/**
 * From now on every server started gets the allocation counter (bench/alloc-preload.ts), which
 * acknowledges in the directory returned. Inert until signaled.
 */
export function countAllocations(): string {
  allocDir ??= mkdtempSync(join(tmpdir(), 'arbiter-bench-alloc-'));
  homes.add(allocDir);
  return allocDir;
}

/** `flags`: Node flags of the server itself, before BENCH_NODE_ARGS (so that a flag given there wins). */
function launch(
  args: string[],
  env: Record<string, string>,
  stdout: 'pipe' | 'ignore',
  flags: readonly string[] = [],
): ChildProcess {
  // BENCH_NODE_ARGS go to every server, e.g. `--cpu-prof --cpu-prof-dir=prof` to profile them under load.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const alloc: Record<string, string> = {};
  if (allocDir) {
    nodeArgs.push('--import', fileURLToPath(new URL('./alloc-preload.js', import.meta.url)));
    alloc.BENCH_ALLOC_DIR = allocDir;
    if (process.env.BENCH_ALLOC_SAMPLING) alloc.BENCH_ALLOC_SAMPLING = process.env.BENCH_ALLOC_SAMPLING;
  }
  const argv = [...wrapper, process.execPath, ...flags, ...nodeArgs, ...args];
  const child = spawn(argv[0], argv.slice(1), {
    env: { PATH: process.env.PATH ?? '', ...alloc, ...env },
    stdio: ['ignore', stdout, 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000 * startFactor());
  await done;
  clearTimeout(timer);
}

async function waitHealthy(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600 * startFactor(); i++) {
    if (child.exitCode !== null) throw new Error(`${url}: exited ${child.exitCode} before becoming ready`);
    try {
      if ((await fetch(`${url}/v1/health/ready`)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

/** Whether PostgreSQL answers at PG_URL. */
export async function pgReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    await c.end().catch(() => undefined);
    return false;
  }
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh, empty database; returns its name and URL. Dropped by `cleanup()`. */
export async function createDatabase(label: string): Promise<{ name: string; url: string }> {
  const name = `bench_${label.replace(/\W/g, '_')}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  databases.add(name);
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return { name, url: u.toString() };
}

/** The SDK's own migration CLI: creates the DatabaseTaskStore's table. */
async function migrateSdkStore(url: string): Promise<void> {
  const child = launch(
    ['node_modules/@a2a-js/sdk/dist/cli/a2a_db.js', 'upgrade', '--url', url, '--store', 'tasks'],
    {},
    'ignore',
  );
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`a2a-db upgrade exited ${code}`);
}

/** The base URL a server prints (`listening on http://…`) once it listens. */
function listening(name: string, child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${out}`)), 60_000 * startFactor());
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve(m[1]);
      }
    });
    child.once('exit', (c) => reject(new Error(`${name} exited ${c}: ${out}`)));
  });
}

/**
 * The bare `node:http` reference (bench/bare-server.ts): the runtime's floor; `durable`, the floor of a server that
 * commits each task to PostgreSQL (one statement per request) before it answers.
 */
export async function bareServer(name: string, durable = false): Promise<Target> {
  const database = durable ? await createDatabase(name) : undefined;
  const env: Record<string, string> = { ...ECHO_ENV, ...(database ? { BARE_DATABASE_URL: database.url } : {}) };
  const child = launch(['dist/bench/bare-server.js'], env, 'pipe');
  const url = await listening(name, child);
  return {
    name,
    endpoints: [`${url}/rpc`],
    headers: { 'a2a-version': '1.0' },
    pids: [child.pid!],
    database: database?.name,
    stop: () => stopChild(child),
  };
}

/** The @a2a-js/sdk reference server (bench/reference-server.ts). */
export async function sdkServer(name: string, store: 'memory' | 'database'): Promise<Target> {
  let database: { name: string; url: string } | undefined;
  const env: Record<string, string> = { ...ECHO_ENV, REFERENCE_STORE: store };
  if (store === 'database') {
    database = await createDatabase(name);
    await migrateSdkStore(database.url);
    env.REFERENCE_DATABASE_URL = database.url;
  }
  const child = launch(['dist/bench/reference-server.js'], env, 'pipe');
  const url = await listening(name, child);
  return {
    name,
    endpoints: [`${url}/rpc`],
    headers: { 'a2a-version': '1.0' },
    pids: [child.pid!],
    database: database?.name,
    stop: () => stopChild(child),
  };
}

export interface ArbiterTarget extends Target {
  /** Base URLs of the replicas, in `pids` order. */
  urls: string[];
  adminToken: string;
}

async function startReplica(
  adminToken: string,
  databaseUrl?: string,
  checkout = '.',
  env: Record<string, string> = {},
  nodeFlags: readonly string[] = ARBITER_NODE_FLAGS,
): Promise<{ child: ChildProcess; url: string }> {
  const home = mkdtempSync(join(tmpdir(), 'arbiter-bench-'));
  homes.add(home);
  // Logs at warn (the reference logs nothing per request), so the port is chosen here.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = launch(
    [join(checkout, 'dist/src/main.js')],
    {
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: adminToken,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // A shorter lease makes renewals and sweeps (of every held run) more frequent: BENCH_LEASE_MS=3000.
      ...(process.env.BENCH_LEASE_MS ? { ARBITER_LEASE_MS: process.env.BENCH_LEASE_MS } : {}),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl, ARBITER_DB_POOL_SIZE: process.env.BENCH_DB_POOL ?? '20' } : {}),
      ...ECHO_ENV,
      ...env,
    },
    'ignore',
    nodeFlags,
  );
  child.once('exit', () => {
    rmSync(home, { recursive: true, force: true });
    homes.delete(home);
  });
  await waitHealthy(url, child);
  return { child, url };
}

/** For the steps that hold thousands of runs or streams for one tenant: above the default caps. */
export const NO_TENANT_CAPS = { ARBITER_TENANT_MAX_OPEN_STREAMS: '0', ARBITER_TENANT_MAX_RUNNING_TASKS: '0' };

/**
 * `replicas` Arbiter processes on one database (PGlite in its own ARBITER_HOME
 * when `databaseUrl` is absent), a tenant created through the admin API.
 * The replicas run with the product's defaults (the tenant's caps and budgets included) unless `extraEnv` says
 * otherwise. `checkout`: the built checkout to run (`npm run bench:ab` compares several); `extraEnv`: more settings
 * for every replica; `nodeFlags`: Node's flags for them (those of `npm start` unless told).
 */
export async function arbiter(
  name: string,
  databaseUrl?: string,
  replicas = 1,
  checkout = '.',
  caller: 'opaque' | 'jwt' = 'opaque',
  extraEnv: Record<string, string> = {},
  nodeFlags: readonly string[] = ARBITER_NODE_FLAGS,
): Promise<ArbiterTarget> {
  const adminToken = `adm_${randomBytes(24).toString('hex')}`;
  const started: { child: ChildProcess; url: string }[] = [];
  // A JWT caller: the local identity provider (in this process, not the server's), trusted through the admin API.
  const idp = caller === 'jwt' ? await startIdp() : undefined;
  const stop = async () => {
    for (const r of started) await stopChild(r.child);
    await idp?.close();
  };
  try {
    const env: Record<string, string> = {
      ...(idp ? { ARBITER_IDENTITY_ALLOWLIST: `127.0.0.1:${idp.port}` } : {}),
      ...extraEnv,
    };
    for (let i = 0; i < replicas; i++) {
      started.push(await startReplica(adminToken, databaseUrl, checkout, env, nodeFlags));
    }
    const admin = (path: string, body: unknown) =>
      fetch(`${started[0].url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await admin('/v1/admin/tenants', { name: 'bench', ...(idp ? { external_id: 'acme' } : {}) });
    if (!res.ok) throw new Error(`${name}: creating the tenant answered ${res.status}: ${await res.text()}`);
    let token = ((await res.json()) as { token: { token: string } }).token.token;
    if (idp) {
      const trusted = await admin('/v1/admin/issuers', {
        issuer: idp.issuer,
        audiences: ['arbiter'],
        tenant_claim: 'org',
      });
      if (!trusted.ok) throw new Error(`${name}: trusting the IdP answered ${trusted.status}: ${await trusted.text()}`);
      token = await idpToken(idp.issuer, 'acme-agent', 'a2a:invoke');
    }
    return {
      name,
      urls: started.map((r) => r.url),
      adminToken,
      endpoints: started.map((r) => `${r.url}/v1/a2a/agents/index`),
      headers: { authorization: `Bearer ${token}`, 'a2a-version': '1.0' },
      pids: started.map((r) => r.child.pid!),
      database: databaseUrl ? new URL(databaseUrl).pathname.slice(1) : undefined,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Arbiter as a gateway: one replica on PostgreSQL with a remote-backed agent (`backend.remote`) whose
 * registry entry is an SDK reference server with its in-memory store, started for this target alone so
 * that its CPU is counted apart (`parts`). The upstream is on loopback: ARBITER_A2A_ALLOW_PRIVATE.
 */
export async function arbiterProxy(name: string): Promise<Target> {
  const upstream = await sdkServer(`${name}-upstream`, 'memory');
  let gateway: ArbiterTarget | undefined;
  const stop = async () => {
    await gateway?.stop();
    await upstream.stop();
  };
  try {
    gateway = await arbiter(name, (await createDatabase('proxy')).url, 1, '.', 'opaque', {
      ARBITER_A2A_ALLOW_PRIVATE: 'true',
    });
    const call = async (path: string, body: unknown) => {
      const res = await fetch(`${gateway!.urls[0]}${path}`, {
        method: 'POST',
        headers: { authorization: gateway!.headers.authorization, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${name}: POST ${path} answered ${res.status}: ${await res.text()}`);
    };
    await call('/v1/remote-agents', { name: 'sdk', url: upstream.endpoints[0] });
    await call('/v1/agents', { id: 'proxy', backend: { remote: 'sdk' } });
    return {
      name,
      endpoints: gateway.urls.map((u) => `${u}/v1/a2a/agents/proxy`),
      headers: gateway.headers,
      pids: [...gateway.pids, ...upstream.pids],
      database: gateway.database,
      parts: [
        { label: 'arbiter', pids: gateway.pids },
        { label: 'upstream', pids: upstream.pids },
      ],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The targets of `npm run bench`, in their default order. `pgReplicas`: the Arbiter replicas it runs on
 * PostgreSQL, each with a pool of `BENCH_DB_POOL` connections.
 */
export const TARGETS: { name: string; postgres: boolean; pgReplicas?: number; start: () => Promise<Target> }[] = [
  { name: 'bare', postgres: false, start: () => bareServer('bare') },
  // A pool of 4 (bench/bare-server.ts), counted in the connection budget of bench/a2a.bench.ts.
  { name: 'bare-pg', postgres: true, start: () => bareServer('bare-pg', true) },
  { name: 'sdk-memory', postgres: false, start: () => sdkServer('sdk-memory', 'memory') },
  { name: 'sdk-db', postgres: true, start: () => sdkServer('sdk-db', 'database') },
  {
    name: 'arbiter-pg',
    postgres: true,
    pgReplicas: 1,
    start: async () => arbiter('arbiter-pg', (await createDatabase('pg')).url),
  },
  {
    name: 'arbiter-pg-jwt',
    postgres: true,
    pgReplicas: 1,
    start: async () => arbiter('arbiter-pg-jwt', (await createDatabase('pg_jwt')).url, 1, '.', 'jwt'),
  },
  { name: 'arbiter-pglite', postgres: false, start: () => arbiter('arbiter-pglite') },
  {
    name: 'arbiter-pg-x2',
    postgres: true,
    pgReplicas: 2,
    start: async () => arbiter('arbiter-pg-x2', (await createDatabase('pg_x2')).url, 2),
  },
  { name: 'arbiter-proxy', postgres: true, pgReplicas: 1, start: () => arbiterProxy('arbiter-proxy') },
];

/** PIDs of the PostgreSQL backends connected to `database` right now. */
export async function backendPids(database: string): Promise<number[]> {
  return admin(async (c) => {
    const { rows } = await c.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      [database],
    );
    return rows.map((r) => r.pid);
  });
}

/** The server's `autovacuum` setting. */
export async function autovacuumSetting(): Promise<string> {
  return admin(async (c) => (await c.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0].autovacuum);
}

/**
 * VACUUM ANALYZE of every database created here, in place of autovacuum (off on
 * some development servers): without statistics the planner may choose plans
 * that get slower as the tables grow, and results would depend on run length.
 */
export async function vacuumAnalyze(): Promise<void> {
  for (const name of databases) {
    const u = new URL(PG_URL);
    u.pathname = `/${name}`;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    try {
      await c.query('VACUUM ANALYZE');
    } finally {
      await c.end();
    }
  }
}

let cleaning: Promise<void> | undefined;

/**
 * Stops every child still running and every server started in this process, and drops every database created
 * here. Idempotent.
 */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all([
      ...[...children].map((c) => stopChild(c).catch(() => undefined)),
      ...[...inProcess].map((s) => s.close().catch(() => undefined)),
    ]);
    for (const h of homes) rmSync(h, { recursive: true, force: true });
    if (databases.size === 0) return;
    await admin(async (c) => {
      for (const name of databases) {
        try {
          await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        } catch (err) {
          process.stderr.write(`could not drop database ${name}: ${String(err)}\n`);
        }
      }
    }).catch((err: unknown) => process.stderr.write(`could not drop the bench databases: ${String(err)}\n`));
  })();
  return cleaning;
}

type LocalIdpModule = typeof import('../scripts/local-idp.mjs');

/** The local identity provider (`npm run idp`) on a free port, tokens valid for the whole run. */
async function startIdp(): Promise<import('../scripts/local-idp.mjs').LocalIdp> {
  const { startLocalIdp } = (await import(
    new URL('../../scripts/local-idp.mjs', import.meta.url).href
  )) as LocalIdpModule;
  const idp = await startLocalIdp({ port: 0, ttlSeconds: 86_400 });
  const entry = {
    close: () => {
      inProcess.delete(entry);
      return idp.close();
    },
  };
  inProcess.add(entry);
  return { ...idp, close: entry.close };
}

/** A client-credentials access token of the local identity provider. */
async function idpToken(issuer: string, client: string, scope: string): Promise<string> {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
  if (!res.ok) throw new Error(`the local IdP answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}
