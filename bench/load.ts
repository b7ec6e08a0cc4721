/**
 * The load generator of `npm run bench`: a closed loop of `concurrency`
 * workers over `node:http` with a keep-alive agent (cheap: it shares the
 * cores with the servers it measures), and the CPU time of processes read
 * from /proc.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process in µs (fields 14 and 15 of /proc/<pid>/stat); 0 when it is gone. */
export function cpuMicros(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // The command (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/** An HTTP client for one measurement: keep-alive, a socket per worker. */
export class Client {
  private readonly agent: Agent;
  constructor(concurrency: number) {
    this.agent = new Agent({ keepAlive: true, maxSockets: Math.max(concurrency, 1) });
  }

  /**
   * POSTs `body` and resolves with the response text once it has ended.
   * `onFirstChunk` is called when the first bytes of the body arrive.
   */
  post(url: URL, headers: Record<string, string>, body: string, onFirstChunk?: () => void): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent: this.agent,
          headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.setEncoding('utf8');
          let text = '';
          res.on('data', (d: string) => {
            if (text === '' && onFirstChunk) onFirstChunk();
            text += d;
          });
          res.on('end', () =>
            res.statusCode === 200 ? resolve(text) : reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`)),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export function messageBody(method: string, configuration?: Record<string, unknown>): string {
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
      ...(configuration ? { configuration } : {}),
    },
  });
}

/** SendMessage, blocking: resolves with the task id once it is TASK_STATE_COMPLETED. */
export async function sendMessage(client: Client, url: URL, headers: Record<string, string>): Promise<string> {
  const json = JSON.parse(await client.post(url, headers, messageBody('SendMessage')));
  const task = json.result?.task;
  if (task?.status?.state !== 'TASK_STATE_COMPLETED' || typeof task.id !== 'string')
    throw new Error(`SendMessage: ${JSON.stringify(json).slice(0, 200)}`);
  return task.id as string;
}

/** SendStreamingMessage: the stream must carry TASK_STATE_COMPLETED. Returns ms to the first bytes. */
export async function streamMessage(client: Client, url: URL, headers: Record<string, string>): Promise<number> {
  const start = performance.now();
  let first = 0;
  const text = await client.post(url, headers, messageBody('SendStreamingMessage'), () => {
    first = performance.now() - start;
  });
  if (!text.includes('"TASK_STATE_COMPLETED"') || text.includes('"error"'))
    throw new Error(`SendStreamingMessage: ${text.slice(-200)}`);
  return first;
}

/** GetTask by id: the reply must be that task. */
export async function getTask(client: Client, url: URL, headers: Record<string, string>, id: string): Promise<void> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } });
  const json = JSON.parse(await client.post(url, headers, body));
  if (json.result?.id !== id || json.result?.status?.state !== 'TASK_STATE_COMPLETED')
    throw new Error(`GetTask: ${JSON.stringify(json).slice(0, 200)}`);
}

export interface LoadResult {
  ops: number;
  errors: number;
  firstError?: string;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Median time to the first streamed bytes, when the operation returns it. */
  firstByteP50?: number;
}

const pct = (sorted: Float64Array, p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * `concurrency` workers, each issuing `op(worker)` back to back for `seconds`.
 * Failed operations count as errors, not as completed requests.
 */
export async function closedLoop(
  concurrency: number,
  seconds: number,
  op: (worker: number) => Promise<unknown>,
): Promise<LoadResult> {
  const latencies: number[] = [];
  const firstBytes: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          const r = await op(worker);
          latencies.push(performance.now() - t0);
          if (typeof r === 'number') firstBytes.push(r);
        } catch (err) {
          errors++;
          firstError ??= String(err);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    ops: latencies.length,
    errors,
    firstError,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    firstByteP50: firstBytes.length ? pct(Float64Array.from(firstBytes).sort(), 50) : undefined,
  };
}
