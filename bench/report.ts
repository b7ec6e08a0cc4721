/**
 * The summary of `npm run bench`: per scenario a Markdown table of the
 * targets (medians over the repetitions, with min–max), and the full results
 * as JSON.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LoadResult } from './load.js';

export interface Measurement extends LoadResult {
  rep: number;
  scenario: string;
  target: string;
  /** Order of this target within its rep and scenario (0 = first). */
  position: number;
  /** utime + stime of the target's server processes over the window, per completed request. */
  serverCpuUsPerReq: number;
  /** The same for the PostgreSQL backends connected to the target's database (approximate). */
  dbCpuUsPerReq?: number;
  /** The same for this (load-generating) process. */
  clientCpuUsPerReq: number;
  /** `serverCpuUsPerReq` by kind of process, for a target of several kinds (a gateway and its upstream). */
  serverCpuPartsUsPerReq?: Record<string, number>;
}

export interface Row {
  scenario: string;
  target: string;
  reps: number;
  errors: number;
  perSecond: Spread;
  p50: number;
  p99: number;
  firstByteP50?: number;
  serverCpuUsPerReq: Spread;
  dbCpuUsPerReq?: Spread;
  clientCpuUsPerReq: Spread;
  /** Median over reps of this target's throughput / the reference's in the same rep. */
  vsSdkMemory?: number;
  vsSdkDb?: number;
  /** Median over reps of this target's server CPU per request / the bare reference's in the same rep. */
  cpuVsBare?: number;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const spread = (xs: number[]): Spread => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

/** The median over reps of `of(mine) / of(reference)`, both measured in the same rep and scenario. */
export function ratio(
  all: Measurement[],
  mine: Measurement[],
  reference: string,
  of: (m: Measurement) => number = (m) => m.perSecond,
): number | undefined {
  const ratios: number[] = [];
  for (const m of mine) {
    const ref = all.find((r) => r.scenario === m.scenario && r.rep === m.rep && r.target === reference);
    if (ref && of(ref) > 0 && Number.isFinite(of(m))) ratios.push(of(m) / of(ref));
  }
  return ratios.length ? median(ratios) : undefined;
}

export function summarize(all: Measurement[], scenarios: string[], targets: string[]): Row[] {
  const rows: Row[] = [];
  for (const scenario of scenarios) {
    for (const target of targets) {
      const mine = all.filter((m) => m.scenario === scenario && m.target === target);
      if (mine.length === 0) continue;
      const db = mine.filter((m) => m.dbCpuUsPerReq !== undefined).map((m) => m.dbCpuUsPerReq!);
      const fb = mine.filter((m) => m.firstByteP50 !== undefined).map((m) => m.firstByteP50!);
      rows.push({
        scenario,
        target,
        reps: mine.length,
        errors: mine.reduce((n, m) => n + m.errors, 0),
        perSecond: spread(mine.map((m) => m.perSecond)),
        p50: median(mine.map((m) => m.p50)),
        p99: median(mine.map((m) => m.p99)),
        firstByteP50: fb.length ? median(fb) : undefined,
        serverCpuUsPerReq: spread(mine.map((m) => m.serverCpuUsPerReq)),
        dbCpuUsPerReq: db.length ? spread(db) : undefined,
        clientCpuUsPerReq: spread(mine.map((m) => m.clientCpuUsPerReq)),
        vsSdkMemory: ratio(all, mine, 'sdk-memory'),
        vsSdkDb: ratio(all, mine, 'sdk-db'),
        cpuVsBare: target === 'bare' ? undefined : ratio(all, mine, 'bare', (m) => m.serverCpuUsPerReq),
      });
    }
  }
  return rows;
}

export const f = (x: number, digits = 0): string => (Number.isFinite(x) ? x.toFixed(digits) : '–');
export const sp = (s: Spread | undefined, digits = 0): string =>
  s ? `${f(s.median, digits)} (${f(s.min, digits)}–${f(s.max, digits)})` : '–';
const x = (r: number | undefined): string => (r === undefined ? '–' : `×${r.toFixed(2)}`);

export function markdown(rows: Row[], labels: Map<string, string>): string {
  const out: string[] = [];
  for (const scenario of [...new Set(rows.map((r) => r.scenario))]) {
    out.push(`### ${labels.get(scenario) ?? scenario} (${scenario})`, '');
    out.push(
      '| target | req/s median (min–max) | p50 ms | p99 ms | server CPU µs/req (min–max) | PostgreSQL CPU µs/req | client CPU µs/req | vs sdk-memory | vs sdk-db | server CPU vs bare | errors |',
      '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    );
    for (const r of rows.filter((row) => row.scenario === scenario)) {
      out.push(
        `| ${r.target} | ${sp(r.perSecond, 1)} | ${f(r.p50, 1)} | ${f(r.p99, 1)} | ${sp(r.serverCpuUsPerReq)} | ` +
          `${sp(r.dbCpuUsPerReq)} | ${f(r.clientCpuUsPerReq.median)} | ${x(r.vsSdkMemory)} | ${x(r.vsSdkDb)} | ` +
          `${r.cpuVsBare === undefined ? '–' : `×${r.cpuVsBare.toFixed(1)} bare`} | ${r.errors} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}

/**
 * Per target, the CPU per blocking send at c=1 over that at c=16, both measured in the same rep: median, min and max
 * over the reps.
 */
export interface SendCpuRatio {
  target: string;
  server: Spread;
  /** Server and PostgreSQL backends together, for a target with a database. */
  withDb?: Spread;
}

export function sendCpuRatios(all: Measurement[], targets: string[]): SendCpuRatio[] {
  const out: SendCpuRatio[] = [];
  for (const target of targets) {
    const server: number[] = [];
    const withDb: number[] = [];
    for (const one of all.filter((m) => m.target === target && m.scenario === 'send-1')) {
      const sixteen = all.find((m) => m.target === target && m.scenario === 'send-16' && m.rep === one.rep);
      if (!sixteen || !(sixteen.serverCpuUsPerReq > 0) || !Number.isFinite(one.serverCpuUsPerReq)) continue;
      server.push(one.serverCpuUsPerReq / sixteen.serverCpuUsPerReq);
      if (one.dbCpuUsPerReq !== undefined && sixteen.dbCpuUsPerReq !== undefined)
        withDb.push((one.serverCpuUsPerReq + one.dbCpuUsPerReq) / (sixteen.serverCpuUsPerReq + sixteen.dbCpuUsPerReq));
    }
    if (server.length)
      out.push({ target, server: spread(server), ...(withDb.length ? { withDb: spread(withDb) } : {}) });
  }
  return out;
}

export function sendCpuRatioTable(ratios: SendCpuRatio[]): string {
  return [
    '| target | server CPU per send, c=1 / c=16 | with its PostgreSQL backends |',
    '|---|--:|--:|',
    ...ratios.map((r) => `| ${r.target} | ${sp(r.server, 2)} | ${sp(r.withDb, 2)} |`),
  ].join('\n');
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
}
