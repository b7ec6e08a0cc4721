import type { HttpClient } from './http.js';

/** The value of one series in a Prometheus text exposition (undefined when absent). */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/**
 * One series of a server's `/metrics` (0 when absent), read with `admin` (the
 * admin token needs no database): a test waits on a counter or gauge — a
 * sweep ran, a run ended — instead of sleeping for as long as that might take.
 */
export async function metric(admin: HttpClient, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await admin.get('/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return sample(res.text, name, labels) ?? 0;
}
