/**
 * Bytes allocated per blocking send, measured inside the server processes by
 * the counter of bench/alloc-preload.ts (every server started after
 * `countAllocations()` has it): `SIGUSR2` starts it, a fixed number of
 * SendMessage requests at c=16 run, `SIGUSR2` again stops it and it writes its
 * count. A fixed count, not a time window, so that every target does the same
 * work whatever its speed.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AllocResult } from './alloc-preload.js';
import { Client } from './load.js';
import type { Target } from './targets.js';

export const ALLOC_CONCURRENCY = 16;
const WARM_UP = 500;

export interface AllocPart {
  target: string;
  /** `arbiter` or `upstream` for a gateway's processes; else the target's name. */
  part: string;
  requests: number;
  errors: number;
  /** Bytes allocated on the JS heap per request, summed over the part's processes. */
  bytesPerRequest: number;
  gcs: number;
  /** The sampling heap profiler's estimate per request (with BENCH_ALLOC_SAMPLING=1). */
  sampledBytesPerRequest?: number;
}

/** `concurrency` workers issuing `op` until `total` have been issued. */
async function countLoop(concurrency: number, total: number, op: () => Promise<unknown>): Promise<number> {
  let issued = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (issued < total) {
        issued++;
        await op().catch(() => errors++);
      }
    }),
  );
  return errors;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Signals each process and waits for its acknowledgement in `dir`. */
async function toggle(dir: string, pids: number[], state: 'started' | 'stopped'): Promise<Map<number, AllocResult>> {
  const file = (pid: number) => join(dir, `${pid}.json`);
  for (const pid of pids) rmSync(file(pid), { force: true });
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  const results = new Map<number, AllocResult>();
  for (const pid of pids) {
    for (let i = 0; ; i++) {
      let data: { state?: string; error?: string } | undefined;
      try {
        data = JSON.parse(readFileSync(file(pid), 'utf8')) as { state?: string };
      } catch {
        // not written yet
      }
      if (data?.state === 'error') throw new Error(`allocation counter of ${pid}: ${data.error}`);
      if (data?.state === state) {
        results.set(pid, data as AllocResult);
        break;
      }
      if (i > 1500) throw new Error(`allocation counter of ${pid}: no "${state}" within 30 s`);
      await sleep(20);
    }
  }
  return results;
}

/** Bytes allocated per blocking send by `t`'s processes, over `requests` SendMessage at c=16 after a warm-up. */
export async function allocationPerSend(
  dir: string,
  t: Target,
  requests: number,
  send: (client: Client) => Promise<unknown>,
): Promise<AllocPart[]> {
  const client = new Client(ALLOC_CONCURRENCY);
  try {
    await countLoop(ALLOC_CONCURRENCY, WARM_UP, () => send(client));
    await toggle(dir, t.pids, 'started');
    const errors = await countLoop(ALLOC_CONCURRENCY, requests, () => send(client));
    const results = await toggle(dir, t.pids, 'stopped');
    keepProfiles(dir, t);
    const parts = t.parts ?? [{ label: t.name, pids: t.pids }];
    return parts.map((p) => {
      const rs = p.pids.map((pid) => results.get(pid)!);
      const sampled = rs.every((r) => r.sampled !== undefined)
        ? rs.reduce((n, r) => n + r.sampled!, 0) / requests
        : undefined;
      return {
        target: t.name,
        part: p.label,
        requests,
        errors,
        bytesPerRequest: rs.reduce((n, r) => n + r.allocated, 0) / requests,
        gcs: rs.reduce((n, r) => n + r.gcs, 0),
        ...(sampled !== undefined ? { sampledBytesPerRequest: sampled } : {}),
      };
    });
  } finally {
    client.close();
  }
}

/** The sampling heap profiles (BENCH_ALLOC_SAMPLING=1), kept as bench/results/alloc-<target>-<pid>.heapprofile. */
function keepProfiles(dir: string, t: Target): void {
  for (const pid of t.pids) {
    const from = join(dir, `${pid}.heapprofile`);
    if (!existsSync(from)) continue;
    mkdirSync('bench/results', { recursive: true });
    copyFileSync(from, `bench/results/alloc-${t.name}-${pid}.heapprofile`);
  }
}

export function allocationTable(parts: AllocPart[]): string {
  const sampling = parts.some((p) => p.sampledBytesPerRequest !== undefined);
  const kib = (b: number) => (b / 1024).toFixed(1);
  const lines = [
    `| target | KiB allocated per blocking send | GCs | errors${sampling ? ' | sampling heap profiler, KiB | counter / profiler' : ''} |`,
    `|---|--:|--:|--:${sampling ? '|--:|--:' : ''}|`,
  ];
  for (const p of parts) {
    const name = p.part === p.target ? p.target : `${p.target}: ${p.part}`;
    const s = p.sampledBytesPerRequest;
    lines.push(
      `| ${name} | ${kib(p.bytesPerRequest)} | ${p.gcs} | ${p.errors}` +
        (sampling
          ? ` | ${s === undefined ? '–' : kib(s)} | ${s ? `×${(p.bytesPerRequest / s).toFixed(2)}` : '–'}`
          : '') +
        ' |',
    );
  }
  return lines.join('\n');
}
