/**
 * `npm run bench`: Arbiter against the official @a2a-js/sdk server and a bare
 * `node:http` server, all started here at the beginning of the run and kept
 * running, on loopback:
 *
 *   bare            plain node:http answering the same JSON with the minimum of work
 *   bare-pg         the same, each task committed to PostgreSQL (one INSERT) before the answer
 *   sdk-memory      the SDK server, InMemoryTaskStore
 *   sdk-db          the same server, the SDK's DatabaseTaskStore on PostgreSQL
 *   arbiter-pg      one Arbiter replica on PostgreSQL
 *   arbiter-pglite  one Arbiter replica on embedded PGlite
 *   arbiter-pg-x2   two replicas on one PostgreSQL database, requests alternating
 *   arbiter-proxy   arbiter-pg with a remote-backed agent in front of an SDK server (in-memory) of its own
 *
 * Closed-loop load from this process, interleaved: for each rep, for each
 * scenario, every target in turn (the order rotated each rep), so that noise
 * on a shared machine hits all targets alike. Reports medians over reps with
 * min–max, server CPU per request from /proc, throughput ratios to the two
 * SDK servers and CPU ratios to the bare server measured in the same run —
 * absolute numbers mean little here. Then the gateway's overhead (the SDK
 * directly against through Arbiter) and the bytes each target allocates per
 * blocking send.
 */
import { randomInt } from 'node:crypto';
import { cpus } from 'node:os';
import {
  CLK_TCK,
  Client,
  closedLoop,
  cpuMicros,
  getTask,
  sendMessage,
  streamMessage,
  type LoadResult,
} from './load.js';
import { ALLOC_CONCURRENCY, allocationPerSend, allocationTable, type AllocPart } from './alloc.js';
import { gatewayTable } from './gateway.js';
import { heldRuns, type HeldRunsResult } from './held.js';
import { idleSubscriptions, type MemoryResult } from './memory.js';
import {
  markdown,
  median,
  sendCpuRatios,
  sendCpuRatioTable,
  summarize,
  writeJson,
  type Measurement,
} from './report.js';
import {
  backendPids,
  cleanup,
  countAllocations,
  createDatabase,
  ECHO_ENV,
  PG_URL,
  pgReachable,
  TARGETS,
  type Target,
  vacuumAnalyze,
  autovacuumSetting,
} from './targets.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 1000);
/** Held runs on one replica for the held-run measurement (0: skip it). */
const HELD = Number(process.env.BENCH_HELD ?? 10000);
const SUBSCRIPTION_SETTLE = Number(process.env.BENCH_SETTLE_SECONDS ?? 35);
/** Blocking sends (c=16) over which each target's allocations are counted (0: skip it). */
const ALLOC = Number(process.env.BENCH_ALLOC ?? 5000);
/** Unmeasured load at the scenario's concurrency right before each window (pools, sockets, JIT). */
const PRIME_SECONDS = Math.min(0.5, SECONDS / 5);
const GET_TASKS = 200;
const RESULTS = 'bench/results/latest.json';

interface Running {
  target: Target;
  urls: URL[];
  turn: number;
  /** Tasks created for the GetTask scenario. */
  taskIds: string[];
}

const next = (r: Running): URL => r.urls[r.turn++ % r.urls.length];

interface Scenario {
  key: string;
  label: string;
  concurrency: number;
  op: (r: Running, client: Client) => Promise<unknown>;
}

const SCENARIOS: Scenario[] = [
  { key: 'send-1', label: 'SendMessage c=1', concurrency: 1, op: (r, c) => sendMessage(c, next(r), r.target.headers) },
  {
    key: 'send-16',
    label: 'SendMessage c=16',
    concurrency: 16,
    op: (r, c) => sendMessage(c, next(r), r.target.headers),
  },
  {
    key: 'send-64',
    label: 'SendMessage c=64',
    concurrency: 64,
    op: (r, c) => sendMessage(c, next(r), r.target.headers),
  },
  {
    key: 'stream-16',
    label: 'SendStreamingMessage c=16',
    concurrency: 16,
    op: (r, c) => streamMessage(c, next(r), r.target.headers),
  },
  {
    key: 'stream-64',
    label: 'SendStreamingMessage c=64',
    concurrency: 64,
    op: (r, c) => streamMessage(c, next(r), r.target.headers),
  },
  {
    key: 'get-16',
    label: `GetTask c=16 (random of ${GET_TASKS})`,
    concurrency: 16,
    op: (r, c) => getTask(c, next(r), r.target.headers, r.taskIds[randomInt(r.taskIds.length)]),
  },
];

function filter<T extends { key?: string; name?: string }>(all: T[], env: string | undefined, what: string): T[] {
  if (!env) return all;
  const wanted = env.split(',').map((s) => s.trim());
  const names = all.map((t) => t.key ?? t.name);
  const unknown = wanted.filter((w) => !names.includes(w));
  if (unknown.length) throw new Error(`unknown ${what}: ${unknown.join(', ')} (known: ${names.join(', ')})`);
  return all.filter((t) => wanted.includes((t.key ?? t.name)!));
}

const withoutPassword = (url: string): string => {
  const u = new URL(url);
  u.password = '';
  return u.toString();
};

const out = (line: string) => process.stdout.write(`${line}\n`);

async function dbCpu(database: string | undefined): Promise<Map<number, number> | undefined> {
  if (!database) return undefined;
  return new Map((await backendPids(database)).map((pid) => [pid, cpuMicros(pid)]));
}

/** CPU of the backends over the window: those seen after it, from 0 if they were not there before. */
function dbDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, us] of after) sum += us - (before.get(pid) ?? 0);
  return sum;
}

async function measure(r: Running, s: Scenario, rep: number, position: number): Promise<Measurement> {
  const client = new Client(s.concurrency);
  try {
    await closedLoop(s.concurrency, PRIME_SECONDS, () => s.op(r, client));
    const dbBefore = await dbCpu(r.target.database);
    const cpu = (pids: number[]) => pids.reduce((n, pid) => n + cpuMicros(pid), 0);
    const parts = r.target.parts ?? [];
    const partsBefore = parts.map((p) => cpu(p.pids));
    const serverBefore = cpu(r.target.pids);
    const selfBefore = process.cpuUsage();
    const res: LoadResult = await closedLoop(s.concurrency, SECONDS, () => s.op(r, client));
    const self = process.cpuUsage(selfBefore);
    const server = cpu(r.target.pids) - serverBefore;
    const partsCpu = parts.map((p, i) => cpu(p.pids) - partsBefore[i]);
    const dbAfter = await dbCpu(r.target.database);
    const perReq = (us: number) => (res.ops > 0 ? us / res.ops : NaN);
    return {
      rep,
      scenario: s.key,
      target: r.target.name,
      position,
      ...res,
      serverCpuUsPerReq: perReq(server),
      dbCpuUsPerReq: dbBefore && dbAfter ? perReq(dbDelta(dbBefore, dbAfter)) : undefined,
      clientCpuUsPerReq: perReq(self.user + self.system),
      ...(parts.length
        ? { serverCpuPartsUsPerReq: Object.fromEntries(parts.map((p, i) => [p.label, perReq(partsCpu[i])])) }
        : {}),
    };
  } finally {
    client.close();
  }
}

function progress(m: Measurement): string {
  const n = (v: number | undefined, d = 0) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));
  return (
    `rep ${m.rep}/${REPS}  ${m.scenario.padEnd(9)} ${m.target.padEnd(15)} ${n(m.perSecond, 1).padStart(8)} req/s` +
    `  p50 ${n(m.p50, 1).padStart(6)} ms  p99 ${n(m.p99, 1).padStart(6)} ms` +
    `  cpu ${n(m.serverCpuUsPerReq).padStart(5)} µs/req` +
    (m.serverCpuPartsUsPerReq
      ? ` (${Object.entries(m.serverCpuPartsUsPerReq)
          .map(([k, v]) => `${k} ${n(v)}`)
          .join(', ')})`
      : '') +
    (m.dbCpuUsPerReq !== undefined ? `  pg ${n(m.dbCpuUsPerReq).padStart(5)}` : '') +
    `  client ${n(m.clientCpuUsPerReq).padStart(4)}` +
    (m.firstByteP50 !== undefined ? `  first bytes p50 ${n(m.firstByteP50, 1)} ms` : '') +
    `  errors ${m.errors}` +
    (m.firstError ? ` (first: ${m.firstError.slice(0, 160)})` : '')
  );
}

/**
 * Each target's warm-up before rep 1, unmeasured: every operation the scenarios make, long enough for the runtime's
 * optimizing compiler to be done with the request path, so that rep 1 measures the server as later reps do (a
 * fresh process compiles for its first seconds under load, on its own threads and at the cost of the requests).
 */
const WARM_UP = { sendSeconds: 3, streamSeconds: 1, getSeconds: 1, concurrency: 4 };

async function prepare(t: Target): Promise<Running> {
  const r: Running = { target: t, urls: t.endpoints.map((e) => new URL(e)), turn: 0, taskIds: [] };
  const client = new Client(8);
  const warm = async (seconds: number, op: () => Promise<unknown>) => {
    const res = await closedLoop(WARM_UP.concurrency, seconds, op);
    if (res.errors) throw new Error(`${t.name}: warm-up failed: ${res.firstError}`);
  };
  try {
    await warm(WARM_UP.sendSeconds, () => sendMessage(client, next(r), t.headers));
    const ids = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const mine: string[] = [];
        for (let i = 0; i < GET_TASKS / 8; i++) mine.push(await sendMessage(client, next(r), t.headers));
        return mine;
      }),
    );
    r.taskIds = ids.flat();
    await warm(WARM_UP.streamSeconds, () => streamMessage(client, next(r), t.headers));
    await warm(WARM_UP.getSeconds, () => getTask(client, next(r), t.headers, r.taskIds[randomInt(r.taskIds.length)]));
  } finally {
    client.close();
  }
  return r;
}

async function main(): Promise<void> {
  const scenarios = filter(SCENARIOS, process.env.BENCH_SCENARIOS, 'scenario');
  let targets = filter(TARGETS, process.env.BENCH_TARGETS, 'target');
  const postgres = await pgReachable();
  if (!postgres && targets.some((t) => t.postgres)) {
    out(
      `PostgreSQL at ${PG_URL} unreachable: skipping ${targets
        .filter((t) => t.postgres)
        .map((t) => t.name)
        .join(', ')}`,
    );
    targets = targets.filter((t) => !t.postgres);
  }
  if (targets.length === 0) throw new Error('no target to run');
  // The replicas' pools within PostgreSQL's 100 connections, unless set: at c=64 on a slow machine every replica fills
  // its pool. Beside them the SDK's durable store holds 10, `bare-pg` 4, the bench up to 3, and each replica one
  // more for its notifications.
  const replicas = targets.reduce((n, t) => n + (t.pgReplicas ?? 0), 0);
  if (replicas > 0) process.env.BENCH_DB_POOL ??= String(Math.min(20, Math.floor((100 - 10 - 4 - 3) / replicas) - 1));
  const autovacuum = postgres ? await autovacuumSetting() : undefined;
  out(
    `${cpus().length} CPUs, node ${process.version}; ${REPS} reps × ${scenarios.length} scenarios × ` +
      `${targets.length} targets, ${SECONDS} s each (after ${PRIME_SECONDS} s unmeasured); CLK_TCK ${CLK_TCK}` +
      (postgres ? `; autovacuum ${autovacuum}, VACUUM ANALYZE of the bench databases before each round` : ''),
  );

  const allocDir = ALLOC > 0 ? countAllocations() : undefined;
  const running: Running[] = [];
  for (const spec of targets) {
    const started = performance.now();
    const t = await spec.start();
    running.push(await prepare(t));
    out(`started ${t.name} (pids ${t.pids.join(', ')}) and warmed up in ${Math.round(performance.now() - started)} ms`);
  }

  const measurements: Measurement[] = [];
  for (let rep = 1; rep <= REPS; rep++) {
    for (const s of scenarios) {
      if (postgres) await vacuumAnalyze();
      const shift = (rep - 1) % running.length;
      const order = [...running.slice(shift), ...running.slice(0, shift)];
      for (const [position, r] of order.entries()) {
        const m = await measure(r, s, rep, position);
        measurements.push(m);
        out(progress(m));
      }
    }
  }
  const alloc: AllocPart[] = [];
  if (allocDir) {
    for (const r of running) {
      const parts = await allocationPerSend(allocDir, r.target, ALLOC, (c) =>
        sendMessage(c, next(r), r.target.headers),
      );
      for (const p of parts)
        out(
          `allocation  ${p.target.padEnd(15)} ${p.part.padEnd(15)} ${(p.bytesPerRequest / 1024).toFixed(1).padStart(7)} KiB/send` +
            `  ${p.gcs} GCs  errors ${p.errors}` +
            (p.sampledBytesPerRequest !== undefined
              ? `  (sampling heap profiler: ${(p.sampledBytesPerRequest / 1024).toFixed(1)} KiB)`
              : ''),
        );
      alloc.push(...parts);
    }
  }
  const pgDatabase = running.find((r) => r.target.name === 'arbiter-pg')?.target.database;
  for (const r of running) await r.target.stop();

  let memory: MemoryResult | undefined;
  if (SUBSCRIPTIONS > 0) {
    if (!postgres) out('\nPostgreSQL unreachable: skipping the idle-subscription memory measurement');
    else {
      const u = new URL(PG_URL);
      u.pathname = `/${pgDatabase ?? (await createDatabase('rss')).name}`;
      memory = await idleSubscriptions(u.toString(), SUBSCRIPTIONS);
    }
  }

  let held: HeldRunsResult | undefined;
  if (HELD > 0) {
    if (!postgres) out('\nPostgreSQL unreachable: skipping the held-run measurement');
    else held = await heldRuns(HELD, REPS, SECONDS);
  }

  const rows = summarize(
    measurements,
    scenarios.map((s) => s.key),
    targets.map((t) => t.name),
  );
  out(
    `\n## A2A throughput: ${targets.length} targets, ${REPS} reps × ${SECONDS} s, interleaved ` +
      `(medians over reps; ratios are medians of per-rep ratios)\n`,
  );
  out(markdown(rows, new Map(scenarios.map((s) => [s.key, s.label]))));
  const cpuRatios = sendCpuRatios(
    measurements,
    targets.map((t) => t.name),
  );
  if (cpuRatios.length) {
    out('\n## A send at c=1 against one at c=16: CPU per request, median (min–max) of the per-rep ratios\n');
    out(sendCpuRatioTable(cpuRatios));
  }
  const gateway = gatewayTable(measurements, scenarios);
  if (gateway) {
    out(
      `\n## Gateway overhead: the SDK server (in-memory store) called directly, and through Arbiter ` +
        `(a remote-backed agent on one arbiter-pg replica); median (min–max) of ${REPS} reps\n`,
    );
    out(gateway);
    out(
      '\n"added": the CPU of Arbiter and the upstream together, less the SDK alone, per request (median of per-rep differences); PostgreSQL\'s is apart.',
    );
  }
  if (alloc.length) {
    out(
      `\n## Allocation: bytes allocated on the JS heap per blocking send (SendMessage c=${ALLOC_CONCURRENCY}, ` +
        `${ALLOC} requests after 500 unmeasured), counted in the server processes\n`,
    );
    out(allocationTable(alloc));
  }
  if (memory) {
    out(
      `\n## Idle subscriptions: resident memory of one arbiter-pg replica (steady state, ${memory.settleSeconds} s idle before each reading)\n`,
    );
    out('| subscriptions | without (MiB) | with (MiB) | per subscription |');
    out('|---|--:|--:|--:|');
    for (const k of memory.kinds) {
      out(
        `| ${memory.subscriptions} × ${k.kind === 'native' ? 'native GET /v1/requests/:id/events' : 'A2A SubscribeToTask (JSON-RPC)'} | ` +
          `${k.beforeMiB.toFixed(1)} | ${k.afterMiB.toFixed(1)} | ${k.kibEach.toFixed(1)} KiB |`,
      );
    }
  }
  if (held) {
    const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
    out(
      `\n## Held runs: one arbiter-pg replica holding ${held.held} runs (\`hold\`) against one holding none, ` +
        `${held.reps} interleaved reps × ${held.seconds} s of SendMessage c=16\n`,
    );
    out('| | holding none | holding ' + held.held + ' | ratio |');
    out('|---|--:|--:|--:|');
    out(
      `| tasks created /s, median (min–max) | ${median(held.none).toFixed(0)} (${range(held.none)}) | ` +
        `${median(held.holding).toFixed(0)} (${range(held.holding)}) | ×${(median(held.holding) / median(held.none)).toFixed(2)} |`,
    );
    out(
      `| server CPU µs per task | ${median(held.cpuNone).toFixed(0)} | ${median(held.cpuHolding).toFixed(0)} | ` +
        `×${(median(held.cpuHolding) / median(held.cpuNone)).toFixed(2)} |`,
    );
    out(
      `\nResident memory: ${held.beforeMiB.toFixed(1)} MiB before, ${held.afterMiB.toFixed(1)} MiB with ${held.held} held ` +
        `runs: ${held.kibEach.toFixed(1)} KiB per held run (steady state, ${SUBSCRIPTION_SETTLE} s idle before each reading); ` +
        `the runs were started at ${held.startRate.toFixed(0)}/s.`,
    );
  }
  writeJson(RESULTS, {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    clkTck: CLK_TCK,
    settings: {
      seconds: SECONDS,
      reps: REPS,
      primeSeconds: PRIME_SECONDS,
      warmUp: `per target before rep 1, at c=${WARM_UP.concurrency}: SendMessage ${WARM_UP.sendSeconds} s, SendStreamingMessage ${WARM_UP.streamSeconds} s, GetTask ${WARM_UP.getSeconds} s`,
      getTaskPool: GET_TASKS,
      subscriptions: SUBSCRIPTIONS,
      heldRuns: HELD,
      allocRequests: ALLOC,
      allocSampling: process.env.BENCH_ALLOC_SAMPLING === '1',
      targets: targets.map((t) => t.name),
      scenarios: scenarios.map((s) => ({ key: s.key, label: s.label, concurrency: s.concurrency })),
      echoEnv: ECHO_ENV,
      arbiterDbPoolSize: Number(process.env.BENCH_DB_POOL ?? 20),
      sdkDbPoolSize: 10,
      barePgPoolSize: 4,
      postgres: postgres ? withoutPassword(PG_URL) : null,
      autovacuum: autovacuum ?? null,
      vacuumAnalyze: postgres ? 'before each (rep, scenario) round, outside the measured windows' : null,
    },
    rows,
    sendCpuRatios: cpuRatios,
    measurements,
    allocation: alloc,
    memory: memory ?? null,
    held: held ?? null,
  });
  out(`\nfull results: ${RESULTS}`);
  const allocErrors = alloc.filter((p, i) => alloc.findIndex((q) => q.target === p.target) === i);
  const errors = measurements.reduce((n, m) => n + m.errors, 0) + allocErrors.reduce((n, p) => n + p.errors, 0);
  if (errors) out(`WARNING: ${errors} failed requests in total (see the errors column)`);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping the servers and dropping the bench databases\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .catch((err: unknown) => {
    if (interrupted) return;
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  // Out once the servers are stopped and the databases dropped, whatever else is still open.
  .finally(() => cleanup().finally(() => process.exit()));
