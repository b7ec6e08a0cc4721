/**
 * `npm run bench`: Arbiter (embedded PGlite, and PostgreSQL when reachable)
 * against an @a2a-js/sdk reference server (in-memory store, same echo),
 * all started here, in the same run, on loopback. Prints throughput and
 * latency per server and the ratio ours/reference — bare numbers on a
 * shared machine mean little; the ratio measured in one run does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get as httpGet, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ECHO_ENV = { ARBITER_ECHO_CHUNKS: '4', ARBITER_ECHO_DELAY_MS: '0' };

interface Target {
  name: string;
  /** One per replica; requests go round-robin. */
  endpoints: string[];
  headers: Record<string, string>;
  stop: () => Promise<void>;
}

let turn = 0;
const endpointOf = (t: Target): string => t.endpoints[turn++ % t.endpoints.length];

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function waitHealthy(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/v1/health/ready`)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

function startProcess(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`did not start: ${out}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ child, url: m[1] });
      }
    });
    child.once('exit', (c) => reject(new Error(`exited ${c}: ${out}`)));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await done;
}

interface Replica {
  child: ChildProcess;
  url: string;
  home: string;
}

async function startReplica(admin: string, databaseUrl?: string): Promise<Replica> {
  const home = mkdtempSync(join(tmpdir(), 'arbiter-bench-'));
  // Logs at warn (the reference logs nothing per request), so the port is chosen here.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl, ARBITER_DB_POOL_SIZE: '20' } : {}),
      ...ECHO_ENV,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitHealthy(url);
  return { child, url, home };
}

async function arbiter(name: string, databaseUrl?: string, replicas = 1): Promise<Target & { replicas: Replica[] }> {
  const admin = `adm_${randomBytes(24).toString('hex')}`;
  const started: Replica[] = [];
  for (let i = 0; i < replicas; i++) started.push(await startReplica(admin, databaseUrl));
  const first = started[0];
  const res = await fetch(`${first.url}/v1/admin/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const token = ((await res.json()) as { token: { token: string } }).token.token;
  return {
    name,
    replicas: started,
    endpoints: started.map((r) => `${r.url}/v1/a2a/agents/index`),
    headers: { authorization: `Bearer ${token}`, 'a2a-version': '1.0' },
    stop: async () => {
      for (const r of started) {
        await stopChild(r.child);
        rmSync(r.home, { recursive: true, force: true });
      }
    },
  };
}

/** Resident memory of a process, from /proc (MiB). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/**
 * Resident memory of one replica holding `n` open, idle SSE subscriptions
 * (`/v1/requests/:id/events` on a task that stays working), against the same
 * process before them.
 */
async function idleSubscriptions(databaseUrl: string, n: number): Promise<{ before: number; after: number }> {
  const t = await arbiter('rss', databaseUrl);
  const replica = t.replicas[0];
  const sockets: ClientRequest[] = [];
  try {
    const started = await fetch(t.endpoints[0], {
      method: 'POST',
      headers: { ...t.headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold' }] },
          configuration: { returnImmediately: true },
        },
      }),
    });
    const taskId = ((await started.json()) as { result: { task: { id: string } } }).result.task.id;
    await load(4, 1, () => sendOnce(t)); // warm the process up as the throughput runs do
    await new Promise((r) => setTimeout(r, 1000));
    const before = rssMiB(replica.child.pid!);
    const url = new URL(`${replica.url}/v1/requests/${taskId}/events`);
    await Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<void>((resolve, reject) => {
            const req = httpGet(url, { headers: { authorization: t.headers.authorization }, agent: false }, (res) => {
              res.once('data', () => resolve()); // the first frame: subscribed
              res.on('error', () => undefined);
            });
            req.on('error', reject);
            sockets.push(req);
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 2000));
    const after = rssMiB(replica.child.pid!);
    for (const s of sockets) s.destroy();
    await fetch(`${replica.url}/v1/requests/${taskId}/cancel`, {
      method: 'POST',
      headers: { authorization: t.headers.authorization },
    });
    return { before, after };
  } finally {
    for (const s of sockets) s.destroy();
    await t.stop();
  }
}

async function reference(): Promise<Target> {
  const { child, url } = await startProcess(['dist/bench/reference-server.js'], ECHO_ENV);
  return {
    name: 'sdk-reference',
    endpoints: [`${url}/rpc`],
    headers: { 'a2a-version': '1.0' },
    stop: () => stopChild(child),
  };
}

function body(method: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      message: {
        messageId: randomUUID(),
        role: 'ROLE_USER',
        parts: [{ text: 'the quick brown fox jumps over the lazy dog' }],
      },
    },
  });
}

async function sendOnce(t: Target): Promise<void> {
  const res = await fetch(endpointOf(t), {
    method: 'POST',
    headers: { ...t.headers, 'content-type': 'application/json' },
    body: body('SendMessage'),
  });
  const json = (await res.json()) as { result?: { task?: { status?: { state?: string } } }; error?: unknown };
  if (json.result?.task?.status?.state !== 'TASK_STATE_COMPLETED')
    throw new Error(`unexpected reply ${JSON.stringify(json).slice(0, 200)}`);
}

/** Returns the time to the first SSE event. */
async function streamOnce(t: Target): Promise<number> {
  const start = performance.now();
  const res = await fetch(endpointOf(t), {
    method: 'POST',
    headers: { ...t.headers, 'content-type': 'application/json' },
    body: body('SendStreamingMessage'),
  });
  const reader = res.body!.getReader();
  let first = -1;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (first < 0) first = performance.now() - start;
    text += Buffer.from(value).toString();
  }
  if (!text.includes('TASK_STATE_COMPLETED')) throw new Error(`stream did not complete: ${text.slice(-200)}`);
  return first;
}

interface Result {
  ops: number;
  perSecond: number;
  p50: number;
  p99: number;
  ttfe50?: number;
  errors: number;
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function load(concurrency: number, seconds: number, op: () => Promise<number | void>): Promise<Result> {
  const latencies: number[] = [];
  const ttfes: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          const r = await op();
          latencies.push(performance.now() - t0);
          if (typeof r === 'number') ttfes.push(r);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return {
    ops: latencies.length,
    perSecond: latencies.length / elapsed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    ttfe50: ttfes.length ? pct(ttfes, 50) : undefined,
    errors,
  };
}

async function pgReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const scenarios: { label: string; run: (t: Target) => Promise<Result> }[] = [
    { label: 'SendMessage c=1', run: (t) => load(1, SECONDS, () => sendOnce(t)) },
    { label: 'SendMessage c=16', run: (t) => load(16, SECONDS, () => sendOnce(t)) },
    { label: 'SendMessage c=64', run: (t) => load(64, SECONDS, () => sendOnce(t)) },
    { label: 'SendStreamingMessage c=16', run: (t) => load(16, SECONDS, () => streamOnce(t)) },
  ];
  const targets: (() => Promise<Target>)[] = [reference, () => arbiter('arbiter-pglite')];
  let dbName: string | undefined;
  let pgDatabase: string | undefined;
  if (await pgReachable()) {
    dbName = `arbiter_bench_${process.pid}`;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`CREATE DATABASE "${dbName}"`);
    await c.end();
    const u = new URL(PG_URL);
    u.pathname = `/${dbName}`;
    targets.push(() => arbiter('arbiter-postgres', u.toString()));
    // Two replicas on the same database, requests alternating between them.
    targets.push(() => arbiter('arbiter-pg-x2', u.toString(), 2));
    pgDatabase = u.toString();
  } else {
    process.stdout.write(`PostgreSQL at ${PG_URL} unreachable; skipping the PostgreSQL run\n`);
  }

  const results = new Map<string, Map<string, Result>>();
  try {
    for (const make of targets) {
      const t = await make();
      try {
        await load(4, 1, () => sendOnce(t)); // warm-up
        const byScenario = new Map<string, Result>();
        for (const s of scenarios) {
          const r = await s.run(t);
          byScenario.set(s.label, r);
          process.stdout.write(
            `${t.name.padEnd(17)} ${s.label.padEnd(26)} ${r.perSecond.toFixed(1).padStart(8)}/s  p50 ${r.p50.toFixed(1).padStart(7)} ms  p99 ${r.p99.toFixed(1).padStart(7)} ms` +
              (r.ttfe50 !== undefined ? `  first event p50 ${r.ttfe50.toFixed(1)} ms` : '') +
              (r.errors ? `  errors ${r.errors}` : '') +
              '\n',
          );
        }
        results.set(t.name, byScenario);
      } finally {
        await t.stop();
      }
    }
    if (pgDatabase) {
      const n = Number(process.env.BENCH_SUBSCRIPTIONS ?? 1000);
      const { before, after } = await idleSubscriptions(pgDatabase, n);
      process.stdout.write(
        `\nresident memory of one replica (PostgreSQL): ${before.toFixed(1)} MiB idle, ${after.toFixed(1)} MiB with ${n} open idle subscriptions ` +
          `(+${(((after - before) * 1024) / n).toFixed(1)} KiB each; x${(after / before).toFixed(2)} of the same process without them)\n`,
      );
    }
  } finally {
    if (dbName) {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      await c.end();
    }
  }

  const ref = results.get('sdk-reference');
  process.stdout.write(
    `\nratio ours/reference (throughput: higher is better; latency: lower is better), ${SECONDS}s per scenario\n`,
  );
  for (const [name, byScenario] of results) {
    if (name === 'sdk-reference' || !ref) continue;
    for (const s of scenarios) {
      const ours = byScenario.get(s.label)!;
      const base = ref.get(s.label)!;
      process.stdout.write(
        `${name.padEnd(17)} ${s.label.padEnd(26)} throughput x${(ours.perSecond / base.perSecond).toFixed(2)}  p50 x${(ours.p50 / base.p50).toFixed(2)}  p99 x${(ours.p99 / base.p99).toFixed(2)}` +
          (ours.ttfe50 !== undefined && base.ttfe50 !== undefined
            ? `  first event x${(ours.ttfe50 / base.ttfe50).toFixed(2)}`
            : '') +
          '\n',
      );
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${String(err)}\n`);
  process.exit(1);
});
