import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A loopback port for a program a test starts and cannot hand port 0 (a webhook a page's example runs, nginx, a
 * private PostgreSQL cluster). It is taken from below the kernel's ephemeral range: a port found by listening on
 * port 0 and closing comes from that range, where every outgoing connection on the machine — another test file's
 * client, a server's pool — takes its local port, so one could hold it by the time the program listens.
 */
export async function portForProgram(): Promise<number> {
  const floor = 10_000;
  const ceiling = ephemeralLow() - 1;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = floor + Math.floor(Math.random() * (ceiling - floor + 1));
    if (await listens(port)) return port;
  }
  throw new Error(`no free loopback port found between ${floor} and ${ceiling}`);
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
