/**
 * Resident memory of one Arbiter replica holding `n` open, idle SSE
 * subscriptions (`/v1/requests/:id/events` on a task that stays working),
 * against the same process before them.
 */
import { readFileSync } from 'node:fs';
import { get as httpGet, type ClientRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, closedLoop, sendMessage } from './load.js';
import { arbiter } from './targets.js';

/** Resident memory of a process, from /proc (MiB). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

export interface MemoryResult {
  subscriptions: number;
  beforeMiB: number;
  afterMiB: number;
  kibEach: number;
}

export async function idleSubscriptions(databaseUrl: string, n: number): Promise<MemoryResult> {
  const t = await arbiter('rss', databaseUrl);
  const pid = t.pids[0];
  const sockets: ClientRequest[] = [];
  const client = new Client(4);
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
    const endpoint = new URL(t.endpoints[0]);
    await closedLoop(4, 1, () => sendMessage(client, endpoint, t.headers));
    await new Promise((r) => setTimeout(r, 1000));
    const beforeMiB = rssMiB(pid);
    const url = new URL(`${t.urls[0]}/v1/requests/${taskId}/events`);
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
    const afterMiB = rssMiB(pid);
    for (const s of sockets) s.destroy();
    await fetch(`${t.urls[0]}/v1/requests/${taskId}/cancel`, {
      method: 'POST',
      headers: { authorization: t.headers.authorization },
    });
    return { subscriptions: n, beforeMiB, afterMiB, kibEach: ((afterMiB - beforeMiB) * 1024) / n };
  } finally {
    client.close();
    for (const s of sockets) s.destroy();
    await t.stop();
  }
}
