/**
 * `npm run bench:ab -- <checkout> <checkout> …`: the same Arbiter scenario
 * against several built checkouts (say, `main` and a change in a git
 * worktree, each after `npm run build`), started side by side and measured
 * interleaved — the order alternating every rep — so that a change's effect
 * is read against its baseline in the same run on this shared machine, not
 * against a figure from another day. Each checkout gets its own database on
 * PostgreSQL (`BENCH_DB=pglite`: its own embedded one); with PostgreSQL,
 * VACUUM ANALYZE runs before every window, as autovacuum would.
 *
 * BENCH_SCENARIOS (default send-16): send-1, send-16, send-64, stream-16,
 * stream-64, get-16; BENCH_REPS (5), BENCH_SECONDS (3). `BENCH_AB_PAIRED=1`
 * loads the checkouts at the same time instead of one after another, each
 * with its own clients: they share the machine's every moment, so a noisy
 * machine slows them alike and their CPU per request compares even when
 * the runs apart do not (the throughput is then each one's share). A checkout may carry
 * Node flags after `@` (`../wt@--max-semi-space-size=64`). Each replica's
 * pool is 20 connections, fewer when many checkouts would pass PostgreSQL's
 * 100 (`BENCH_DB_POOL` sets it). `BENCH_AB_ALLOC=<n>` also counts each
 * checkout's allocation over n blocking sends at c=16, every rep,
 * interleaved the same way (`BENCH_SCENARIOS=` alone: only that).
 */
import { resolve } from 'node:path';
import { allocationPerSend } from './alloc.js';
import { Client, closedLoop, cpuMicros, getTask, sendMessage, streamMessage, type LoadResult } from './load.js';
import { median } from './report.js';
import {
  arbiter,
  backendPids,
  cleanup,
  countAllocations,
  createDatabase,
  pgReachable,
  vacuumAnalyze,
  type ArbiterTarget,
} from './targets.js';

const REPS = Number(process.env.BENCH_REPS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ON_PGLITE = process.env.BENCH_DB === 'pglite';
const PAIRED = process.env.BENCH_AB_PAIRED === '1';
/** Blocking sends (c=16) over which each checkout's allocation is counted, each rep, after the scenarios (0: none). */
const ALLOC = Number(process.env.BENCH_AB_ALLOC ?? 0);
const SCENARIOS: Record<string, { c: number; op: 'send' | 'stream' | 'get' }> = {
  'send-1': { c: 1, op: 'send' },
  'send-16': { c: 16, op: 'send' },
  'send-64': { c: 64, op: 'send' },
  'stream-16': { c: 16, op: 'stream' },
  'stream-64': { c: 64, op: 'stream' },
  'get-16': { c: 16, op: 'get' },
};

interface Running {
  label: string;
  target: ArbiterTarget;
  url: URL;
  taskIds: string[];
  results: Map<string, Window[]>;
}

interface Window extends LoadResult {
  serverUs: number;
  pgUs: number | undefined;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
/** `median (min–max)` of the reps, `d` decimals. */
const medianRange = (xs: number[], d = 0): string =>
  `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;

async function start(spec: string): Promise<Running> {
  const [dir = '.', ...flags] = spec.split('@');
  // Node flags of this checkout's servers (the launcher reads BENCH_NODE_ARGS when it spawns them).
  const before = process.env.BENCH_NODE_ARGS;
  process.env.BENCH_NODE_ARGS = [before ?? '', ...flags].join(' ').trim();
  try {
    const db = ON_PGLITE ? undefined : (await createDatabase('ab')).url;
    const target = await arbiter(spec, db, 1, resolve(dir));
    const url = new URL(target.endpoints[0]);
    const client = new Client(8);
    await closedLoop(8, 1.5, () => sendMessage(client, url, target.headers));
    const taskIds: string[] = [];
    for (let i = 0; i < 200; i++) taskIds.push(await sendMessage(client, url, target.headers));
    client.close();
    return { label: spec, target, url, taskIds, results: new Map() };
  } finally {
    if (before === undefined) delete process.env.BENCH_NODE_ARGS;
    else process.env.BENCH_NODE_ARGS = before;
  }
}

async function pgCpu(database: string | undefined): Promise<Map<number, number> | undefined> {
  if (!database) return undefined;
  return new Map((await backendPids(database)).map((pid) => [pid, cpuMicros(pid)]));
}

async function measure(r: Running, scenario: string): Promise<Window> {
  const { c, op } = SCENARIOS[scenario];
  const client = new Client(c);
  const call = (): Promise<unknown> =>
    op === 'send'
      ? sendMessage(client, r.url, r.target.headers)
      : op === 'stream'
        ? streamMessage(client, r.url, r.target.headers)
        : getTask(client, r.url, r.target.headers, r.taskIds[Math.floor(Math.random() * r.taskIds.length)]);
  try {
    await closedLoop(c, 0.5, call);
    const pg0 = await pgCpu(r.target.database);
    const s0 = cpuMicros(r.target.pids[0]);
    const res = await closedLoop(c, SECONDS, call);
    const serverUs = (cpuMicros(r.target.pids[0]) - s0) / res.ops;
    const pg1 = await pgCpu(r.target.database);
    let pgUs: number | undefined;
    if (pg0 && pg1) {
      let sum = 0;
      for (const [pid, us] of pg1) sum += us - (pg0.get(pid) ?? 0);
      pgUs = sum / res.ops;
    }
    return { ...res, serverUs, pgUs };
  } finally {
    client.close();
  }
}

async function main(): Promise<void> {
  const checkouts = process.argv.slice(2);
  if (checkouts.length === 0) throw new Error('usage: npm run bench:ab -- <checkout> [<checkout> …] (each built)');
  if (!ON_PGLITE && !(await pgReachable()))
    throw new Error('PostgreSQL is unreachable (BENCH_DB=pglite to use PGlite)');
  const scenarios = (process.env.BENCH_SCENARIOS ?? 'send-16')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of scenarios) if (!SCENARIOS[s]) throw new Error(`unknown scenario ${s}`);
  // Every checkout's pool within PostgreSQL's connections (100 by default), unless set.
  process.env.BENCH_DB_POOL ??= String(Math.min(20, Math.floor(80 / checkouts.length) - 2));
  // Before the servers start: they are started with the allocation counter (inert until signalled).
  const allocDir = ALLOC > 0 ? countAllocations() : undefined;
  const running: Running[] = [];
  for (const spec of checkouts) running.push(await start(spec));
  out(
    `${checkouts.length} checkouts${PAIRED ? ' loaded together' : ''}, ${REPS} reps × ${SECONDS} s, ` +
      (ON_PGLITE ? 'PGlite' : 'PostgreSQL'),
  );
  for (let rep = 0; rep < REPS; rep++) {
    for (const scenario of scenarios) {
      if (!ON_PGLITE) await vacuumAnalyze();
      const order = rep % 2 ? [...running].reverse() : running;
      const windows: Window[] = [];
      if (PAIRED) windows.push(...(await Promise.all(order.map((r) => measure(r, scenario)))));
      else for (const r of order) windows.push(await measure(r, scenario));
      for (const [i, r] of order.entries()) {
        const w = windows[i];
        (r.results.get(scenario) ?? r.results.set(scenario, []).get(scenario)!).push(w);
        out(
          `rep ${rep + 1} ${scenario.padEnd(9)} ${r.label.padEnd(24)} ${w.perSecond.toFixed(0).padStart(6)} req/s ` +
            `p99 ${w.p99.toFixed(1).padStart(6)} ms  cpu ${w.serverUs.toFixed(0).padStart(4)} µs/req` +
            (w.pgUs === undefined ? '' : `  pg ${w.pgUs.toFixed(0).padStart(4)}`) +
            (w.errors ? `  errors ${w.errors} (${w.firstError ?? ''})` : ''),
        );
      }
    }
  }
  const allocated = new Map<Running, number[]>();
  if (allocDir) {
    for (let rep = 0; rep < REPS; rep++) {
      for (const r of rep % 2 ? [...running].reverse() : running) {
        const [part] = await allocationPerSend(allocDir, r.target, ALLOC, (client) =>
          sendMessage(client, r.url, r.target.headers),
        );
        const kib = part.bytesPerRequest / 1024;
        (allocated.get(r) ?? allocated.set(r, []).get(r)!).push(kib);
        out(
          `rep ${rep + 1} alloc     ${r.label.padEnd(24)} ${kib.toFixed(2).padStart(6)} KiB per blocking send ` +
            `(${part.gcs} GCs${part.errors ? `, ${part.errors} errors` : ''})`,
        );
      }
    }
  }
  for (const scenario of scenarios) {
    out(`\n${scenario}: medians (min–max) of ${REPS}\n`);
    // Loaded together, each rep's windows are the same moments: the ratio of CPU per request within a rep is the
    // steadiest comparison, the first checkout the baseline.
    out(
      `| checkout | req/s | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req |${PAIRED ? ' CPU ÷ first, per rep |' : ''}`,
    );
    out(`|---|--:|--:|--:|--:|${PAIRED ? '--:|' : ''}`);
    const base = running[0].results.get(scenario) ?? [];
    for (const r of running) {
      const ws = r.results.get(scenario) ?? [];
      const pg = ws.map((w) => w.pgUs).filter((x): x is number => x !== undefined);
      const ratio = PAIRED
        ? ` ${medianRange(
            ws.map((w, i) => w.serverUs / base[i].serverUs),
            3,
          )} |`
        : '';
      out(
        `| ${r.label} | ${medianRange(ws.map((w) => w.perSecond))} | ${medianRange(
          ws.map((w) => w.p99),
          1,
        )} | ` + `${medianRange(ws.map((w) => w.serverUs))} | ${pg.length ? medianRange(pg) : '–'} |${ratio}`,
      );
    }
  }
  if (allocDir) {
    out(`\nallocation: KiB per blocking send (c=16, ${ALLOC} sends after a warm-up), medians (min–max) of ${REPS}\n`);
    out('| checkout | KiB / send |');
    out('|---|--:|');
    for (const r of running) {
      const xs = allocated.get(r) ?? [];
      out(`| ${r.label} | ${medianRange(xs, 1)} |`);
    }
  }
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    void cleanup().finally(() => process.exit(130));
  });
}
main()
  .catch((err: unknown) => {
    if (interrupted) return;
    process.stderr.write(`bench:ab failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  // Out once the servers are stopped and the databases dropped, whatever else is still open.
  .finally(() => cleanup().finally(() => process.exit()));
