/**
 * Resident memory of an Arbiter replica holding `n` open, idle SSE
 * subscriptions to a task that stays working — the native API's
 * `GET /v1/requests/:id/events`, and A2A `SubscribeToTask` over JSON-RPC,
 * each in a replica of its own — against the same process without them.
 *
 * Every reading is taken in the process's steady state: opening a thousand
 * connections at once leaves garbage and a grown young generation that V8's
 * memory reducer gives back only after the process has been idle for a
 * while (about 20–30 s here), so each reading waits `SETTLE_S` seconds, then
 * takes the median of three samples. Without that, the figure says more
 * about when it was read than about the subscriptions.
 */
import { readFileSync } from 'node:fs';
import { request, type ClientRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, closedLoop, sendMessage } from './load.js';
import { arbiter, NO_TENANT_CAPS } from './targets.js';

const SETTLE_S = Number(process.env.BENCH_SETTLE_SECONDS ?? 35);

/** Resident memory of a process, from /proc (MiB). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

export interface SubscriptionMemory {
  kind: 'native' | 'a2a-jsonrpc';
  beforeMiB: number;
  afterMiB: number;
  kibEach: number;
}

export interface MemoryResult {
  subscriptions: number;
  settleSeconds: number;
  kinds: SubscriptionMemory[];
}

export async function idleSubscriptions(databaseUrl: string, n: number): Promise<MemoryResult> {
  const kinds: SubscriptionMemory[] = [];
  for (const kind of ['native', 'a2a-jsonrpc'] as const) kinds.push(await oneKind(databaseUrl, n, kind));
  return { subscriptions: n, settleSeconds: SETTLE_S, kinds };
}

async function oneKind(databaseUrl: string, n: number, kind: SubscriptionMemory['kind']): Promise<SubscriptionMemory> {
  // Node's defaults, not `npm start`'s flags: a settled reading needs the memory reducer (see above).
  const t = await arbiter(`rss-${kind}`, databaseUrl, 1, '.', 'opaque', NO_TENANT_CAPS, []);
  const pid = t.pids[0];
  const base = new URL(t.urls[0]);
  const client = new Client(4);
  const open: ClientRequest[] = [];
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
    // Warm the process up as the throughput runs do.
    await closedLoop(4, 1, () => sendMessage(client, new URL(t.endpoints[0]), t.headers));
    const beforeMiB = await settled(pid);
    const target =
      kind === 'native'
        ? { path: `/v1/requests/${taskId}/events`, method: 'GET', body: '' }
        : {
            path: new URL(t.endpoints[0]).pathname,
            method: 'POST',
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }),
          };
    // Fifty at a time; each resolves at its first frame (subscribed).
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        Array.from(
          { length: Math.min(50, n - i) },
          () =>
            new Promise<void>((resolve, reject) => {
              const req = request(
                {
                  host: base.hostname,
                  port: base.port,
                  path: target.path,
                  method: target.method,
                  agent: false,
                  headers: { ...t.headers, 'content-type': 'application/json' },
                },
                (res) => {
                  res.once('data', () => resolve());
                  res.on('error', () => undefined);
                },
              );
              req.on('error', reject);
              req.end(target.body);
              open.push(req);
            }),
        ),
      );
    }
    const afterMiB = await settled(pid);
    for (const s of open) s.destroy();
    await fetch(`${t.urls[0]}/v1/requests/${taskId}/cancel`, {
      method: 'POST',
      headers: { authorization: t.headers.authorization },
    });
    return { kind, beforeMiB, afterMiB, kibEach: ((afterMiB - beforeMiB) * 1024) / n };
  } finally {
    client.close();
    for (const s of open) s.destroy();
    await t.stop();
  }
}
