/**
 * `npm run bench:instructions`: the instructions a blocking send costs, counted by valgrind's callgrind — a figure
 * that, unlike the CPU time `npm run bench` reads, does not depend on the machine's speed, its load, or how cold
 * its caches are after the processor idles.
 *
 * Each target (`arbiter-pg` and the `bare-pg` floor by default) runs under callgrind with its instrumentation
 * off (still several times slower than without valgrind, but far faster than counting); it is warmed up with sends
 * at c=4, then counted over a fixed number of sends at c=16, at c=1, and both again. A target of one server
 * process only (not the gateway with its upstream, not two replicas). The main thread (the request's work) is
 * reported apart from V8's helper threads (the optimizing compiler, the garbage collector's helpers), whose share
 * depends on how far compilation has got.
 *
 *   BENCH_INSTR_TARGETS  targets of `npm run bench` to count (default arbiter-pg,bare-pg)
 *   BENCH_INSTR_SENDS    sends per counted window (default 600)
 *   BENCH_INSTR_WARM     sends of the warm-up (default 8000)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, sendMessage } from './load.js';
import { cleanup, pgReachable, runUnder, TARGETS, type Target } from './targets.js';

const SENDS = Number(process.env.BENCH_INSTR_SENDS ?? 600);
const WARM = Number(process.env.BENCH_INSTR_WARM ?? 8000);
const NAMES = (process.env.BENCH_INSTR_TARGETS ?? 'arbiter-pg,bare-pg').split(',').filter(Boolean);
const WINDOWS = [16, 1, 16, 1];
/** Where callgrind writes its dumps; removed at the end, or on ^C. */
let dir = '';

/** Instructions counted in one window: the main thread's, and every thread's. */
export interface Counted {
  concurrency: number;
  main: number;
  all: number;
}

/**
 * The totals of callgrind dump `part` of process `pid` in `dir` (files `cg.<pid>.<part>-<thread>` with
 * `--separate-threads=yes`): thread 01 is the main thread.
 */
export function readPart(dir: string, pid: number, part: number): { main: number; all: number } {
  const prefix = `cg.${pid}.${part}-`;
  let main: number | undefined;
  let all = 0;
  for (const f of readdirSync(dir).filter((n) => n.startsWith(prefix))) {
    const m = /^totals:\s+(\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (!m) throw new Error(`${f}: no totals line`);
    all += Number(m[1]);
    if (f === `${prefix}01`) main = Number(m[1]);
  }
  if (main === undefined) throw new Error(`no dump of the main thread (${prefix}01) in ${dir}`);
  return { main, all };
}

async function sends(target: Target, concurrency: number, n: number): Promise<void> {
  const client = new Client(concurrency);
  const url = new URL(target.endpoints[0]);
  let left = n;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await sendMessage(client, url, target.headers);
      }),
    );
  } finally {
    client.close();
  }
}

const control = (pid: number, ...args: string[]): void => {
  execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore', timeout: 120_000 });
};

async function count(name: string): Promise<Counted[]> {
  const spec = TARGETS.find((t) => t.name === name);
  if (!spec) throw new Error(`unknown target ${name} (one of ${TARGETS.map((t) => t.name).join(', ')})`);
  const started = performance.now();
  const target = await spec.start();
  try {
    if (target.pids.length !== 1) throw new Error(`${name}: ${target.pids.length} server processes; one is counted`);
    const pid = target.pids[0];
    console.error(`started ${name} under callgrind (pid ${pid}) in ${Math.round(performance.now() - started)} ms`);
    await sends(target, 4, WARM);
    const out: Counted[] = [];
    for (const [i, c] of WINDOWS.entries()) {
      control(pid, '-i', 'on');
      control(pid, '-z');
      await sends(target, c, SENDS);
      control(pid, '-i', 'off');
      control(pid, '-d', `c${c}`);
      const { main, all } = readPart(dir, pid, i + 1);
      out.push({ concurrency: c, main: main / SENDS, all: all / SENDS });
      console.error(`${name} c=${c}: ${Math.round(main / SENDS)} instructions per send on the main thread`);
    }
    return out;
  } finally {
    await target.stop();
  }
}

const k = (n: number): string => `${Math.round(n / 1000)}k`;

/** One row per target: each window's count, and c=1 over c=16 pass by pass. */
export function instructionTable(results: { name: string; windows: Counted[] }[]): string {
  const lines = [
    '| target | main thread, c=16 | main thread, c=1 | c=1 / c=16, main thread | all threads, c=16 | all threads, c=1 |',
    '|---|--:|--:|--:|--:|--:|',
  ];
  for (const { name, windows } of results) {
    const at = (c: number, key: 'main' | 'all') => windows.filter((w) => w.concurrency === c).map((w) => w[key]);
    const ratios = at(1, 'main').map((v, i) => (v / at(16, 'main')[i]).toFixed(2));
    lines.push(
      `| ${name} | ${at(16, 'main').map(k).join(', ')} | ${at(1, 'main').map(k).join(', ')} | ${ratios.join(', ')} | ` +
        `${at(16, 'all').map(k).join(', ')} | ${at(1, 'all').map(k).join(', ')} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');
  }
  if (TARGETS.some((t) => NAMES.includes(t.name) && t.postgres) && !(await pgReachable())) {
    throw new Error('PostgreSQL is not reachable (BENCH_DATABASE_URL)');
  }
  dir = mkdtempSync(join(tmpdir(), 'arbiter-bench-callgrind-'));
  runUnder([
    'valgrind',
    '-q',
    '--tool=callgrind',
    '--instr-atstart=no',
    '--separate-threads=yes',
    '--smc-check=all-non-file',
    `--callgrind-out-file=${dir}/cg.%p`,
  ]);
  const results: { name: string; windows: Counted[] }[] = [];
  try {
    for (const name of NAMES) results.push({ name, windows: await count(name) });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `\n## Instructions per blocking send (callgrind; ${SENDS} sends per window, windows in the order ` +
      `c=${WINDOWS.join(', c=')}, after ${WARM} sends at c=4)\n`,
  );
  console.log(instructionTable(results));
}

if (process.argv[1]?.endsWith('instructions.bench.js')) {
  process.once('SIGINT', () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    void cleanup().finally(() => process.exit(130));
  });
  main()
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(() => cleanup().finally(() => process.exit()));
}
