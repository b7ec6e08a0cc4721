/**
 * Held runs: what a replica pays for tasks that wait — runs of the offline
 * echo model's `hold`, alive until they are continued or canceled, as agents
 * waiting on a person, a long model call or a remote delegation are. Two
 * Arbiter replicas, each on a database of its own: one holds `n` runs, the
 * other none. Their creation rates (blocking `SendMessage`, c=16) are
 * measured interleaved, rep by rep, and the resident memory of the holding
 * one before and after its runs were started gives the cost of each.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Client, closedLoop, cpuMicros, sendMessage } from './load.js';
import { arbiter, createDatabase, NO_TENANT_CAPS, type ArbiterTarget } from './targets.js';

const SETTLE_S = Number(process.env.BENCH_SETTLE_SECONDS ?? 35);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return kb / 1024;
}

/** The steady-state RSS: after `SETTLE_S` s idle, the median of three samples 2 s apart. */
async function settled(pid: number): Promise<number> {
  await sleep(SETTLE_S * 1000);
  const samples: number[] = [];
  for (let i = 0; i < 3; i++) {
    if (i) await sleep(2000);
    samples.push(rssMiB(pid));
  }
  return samples.sort((a, b) => a - b)[1];
}

export interface HeldRunsResult {
  held: number;
  reps: number;
  seconds: number;
  /** Tasks created per second (c=16), each rep: on the replica holding none, and on the one holding `held`. */
  none: number[];
  holding: number[];
  /** Server CPU µs per created task, each rep, likewise. */
  cpuNone: number[];
  cpuHolding: number[];
  /** How fast the `held` runs were started (tasks/s). */
  startRate: number;
  beforeMiB: number;
  afterMiB: number;
  kibEach: number;
}

/** Starts `n` held runs (returnImmediately), `concurrency` at a time. */
async function hold(t: ArbiterTarget, n: number, concurrency = 32): Promise<number> {
  const url = new URL(t.endpoints[0]);
  const client = new Client(concurrency);
  let started = 0;
  const t0 = performance.now();
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (started < n) {
          started++;
          const body = JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'SendMessage',
            params: {
              message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold' }] },
              configuration: { returnImmediately: true },
            },
          });
          const json = JSON.parse(await client.post(url, t.headers, body));
          if (json.result?.task?.status?.state !== 'TASK_STATE_WORKING') {
            throw new Error(`hold: ${JSON.stringify(json).slice(0, 200)}`);
          }
        }
      }),
    );
  } finally {
    client.close();
  }
  return n / ((performance.now() - t0) / 1000);
}

async function rate(t: ArbiterTarget, seconds: number): Promise<{ perSecond: number; cpuUs: number }> {
  const url = new URL(t.endpoints[0]);
  const client = new Client(16);
  try {
    await closedLoop(16, Math.min(0.5, seconds / 5), () => sendMessage(client, url, t.headers));
    const before = cpuMicros(t.pids[0]);
    const r = await closedLoop(16, seconds, () => sendMessage(client, url, t.headers));
    if (r.errors) throw new Error(`send: ${r.firstError}`);
    return { perSecond: r.perSecond, cpuUs: (cpuMicros(t.pids[0]) - before) / r.ops };
  } finally {
    client.close();
  }
}

export async function heldRuns(n: number, reps: number, seconds: number): Promise<HeldRunsResult> {
  // Node's defaults, not `npm start`'s flags: a settled memory reading needs the memory reducer (bench/memory.ts).
  const none = await arbiter(
    'held-none',
    (await createDatabase('held_none')).url,
    1,
    '.',
    'opaque',
    NO_TENANT_CAPS,
    [],
  );
  const holding = await arbiter('held-n', (await createDatabase('held_n')).url, 1, '.', 'opaque', NO_TENANT_CAPS, []);
  try {
    await rate(holding, 1); // warm up as the other one will be
    await rate(none, 1);
    const beforeMiB = await settled(holding.pids[0]);
    const startRate = await hold(holding, n);
    const afterMiB = await settled(holding.pids[0]);
    const result: HeldRunsResult = {
      held: n,
      reps,
      seconds,
      none: [],
      holding: [],
      cpuNone: [],
      cpuHolding: [],
      startRate,
      beforeMiB,
      afterMiB,
      kibEach: ((afterMiB - beforeMiB) * 1024) / n,
    };
    for (let rep = 0; rep < reps; rep++) {
      // The order alternates each rep, so that neither always goes first.
      for (const which of rep % 2 === 0 ? (['none', 'holding'] as const) : (['holding', 'none'] as const)) {
        const r = await rate(which === 'none' ? none : holding, seconds);
        result[which].push(r.perSecond);
        result[which === 'none' ? 'cpuNone' : 'cpuHolding'].push(r.cpuUs);
      }
    }
    return result;
  } finally {
    await none.stop();
    await holding.stop();
  }
}
