import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { portForProgram } from './ports.js';

/**
 * A PostgreSQL cluster of the test's own (Debian's `pg_createcluster`), on a
 * free port, trusted on loopback: a test may stop and start it for real —
 * the server process goes, its clock and its connections with it — which a
 * TCP proxy cut does not do. The machine's shared server is never touched.
 */
export interface PrivateCluster {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  drop(): Promise<void>;
}

const run = (cmd: string, args: string[]): Promise<string> =>
  new Promise((resolve, reject) =>
    execFile(cmd, args, { timeout: 120_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );

/** Why a private cluster cannot be made here (no Debian tools, not root), or undefined when it can. */
export function privateClusterUnavailable(): string | undefined {
  if (!existsSync('/usr/bin/pg_createcluster')) return 'no pg_createcluster (Debian postgresql-common)';
  if (process.getuid?.() !== 0) return 'pg_createcluster needs root';
  if (!existsSync('/usr/lib/postgresql') || readdirSync('/usr/lib/postgresql').length === 0) {
    return 'no PostgreSQL server binaries';
  }
  return undefined;
}

export async function createPrivateCluster(): Promise<PrivateCluster> {
  const version = readdirSync('/usr/lib/postgresql').sort().at(-1)!;
  const name = `arbiter_t${randomBytes(4).toString('hex')}`;
  const port = await portForProgram();
  await run('pg_createcluster', [version, name, '-p', String(port), '--', '--auth-host=trust', '--auth-local=trust']);
  const ctl = (...args: string[]) => run('pg_ctlcluster', [version, name, ...args]);
  await ctl('start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    // A fast shutdown, as an operator's restart or a failover does: sessions are cut, nothing waits for them.
    stop: async () => void (await ctl('stop', '-m', 'fast')),
    start: async () => void (await ctl('start')),
    drop: async () => void (await run('pg_dropcluster', [version, name, '--stop'])),
  };
}
