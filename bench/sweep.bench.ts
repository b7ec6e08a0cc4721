/**
 * `npm run bench:sweep`: how long orphaned tasks stay running after their
 * owner dies, in leases. A server process runs with a short lease on a fresh
 * PostgreSQL database; a replica that the server has seen connected (its
 * notice connection, `arbiter:<id>`) renews the leases of N tasks and dies —
 * its connection closes; the time until the last of them is ended ("owner
 * lost") is measured from that moment. The promise is 1 to 1.5 leases plus
 * the sweep itself. The end time is each task's status timestamp (same
 * machine, same clock). Repeated, medians with min–max.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ARBITER_NODE_FLAGS } from './targets.js';

const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LEASE_MS = Number(process.env.BENCH_LEASE_MS ?? 3000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const SIZES = (process.env.BENCH_ORPHANS ?? '1000,10000').split(',').map(Number);

async function startServer(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...ARBITER_NODE_FLAGS, 'dist/src/main.js'], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('server did not start'));
    }, 60_000);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('listening on')) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve();
      }
    });
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
  return child;
}

async function measure(db: pg.Client, url: string, orphans: number): Promise<number> {
  const tenant = randomUUID();
  const owner = `dead-${tenant.slice(0, 8)}`;
  await db.query(`INSERT INTO tenants (id, name) VALUES ($1, $2)`, [tenant, `bench-${tenant.slice(0, 8)}`]);
  // The owner is connected as a replica is, long enough for the server's sweeps to see it…
  const replica = new pg.Client({ connectionString: url, application_name: `arbiter:${owner}` });
  await replica.connect();
  await new Promise((r) => setTimeout(r, LEASE_MS));
  // …renews these leases, and dies: its connection closes.
  const [{ t0 }] = (
    await db.query<{ t0: Date }>(
      `WITH ins AS (
         INSERT INTO a2a_tasks (task_id, tenant_id, agent_id, context_id, state, updated_at, last_seq, owner_instance, lease_expires_at)
         SELECT $1::text || '-' || i, $1::uuid, 'index', 'ctx', 'TASK_STATE_WORKING', now(), 3, $4::text,
                now() + make_interval(secs => $3::int / 1000.0)
           FROM generate_series(1, $2::int) AS i
         RETURNING 1)
       SELECT now() AS t0, count(*) FROM ins`,
      [tenant, orphans, LEASE_MS, owner],
    )
  ).rows;
  await replica.end();
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM a2a_tasks WHERE tenant_id = $1 AND state = 'TASK_STATE_WORKING'`,
      [tenant],
    );
    if (rows[0]?.n === 0) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const { rows } = await db.query<{ ms: number }>(
    `SELECT extract(epoch FROM (max(updated_at) - $2::timestamptz)) * 1000 AS ms FROM a2a_tasks WHERE tenant_id = $1`,
    [tenant, t0.toISOString()],
  );
  return Number(rows[0]?.ms);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const name = `arbiter_sweep_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const home = mkdtempSync(join(tmpdir(), 'arbiter-sweep-'));
  let server: ChildProcess | undefined;
  const db = new pg.Client({ connectionString: url.toString() });
  try {
    server = await startServer({
      ARBITER_HOME: home,
      DATABASE_URL: url.toString(),
      ARBITER_ADMIN_TOKEN: `adm_${randomBytes(20).toString('hex')}`,
      ARBITER_LEASE_MS: String(LEASE_MS),
    });
    await db.connect();
    console.log(`orphan sweep, one replica, ARBITER_LEASE_MS=${LEASE_MS}, ${REPS} reps`);
    console.log('orphans   last ended after (ms)        in leases (median, min–max)');
    for (const n of SIZES) {
      const ms: number[] = [];
      for (let i = 0; i < REPS; i++) ms.push(await measure(db, url.toString(), n));
      const leases = ms.map((x) => x / LEASE_MS);
      console.log(
        `${String(n).padStart(7)}   ${ms
          .map((x) => Math.round(x))
          .join(', ')
          .padEnd(26)}` +
          `${median(leases).toFixed(2)}× (${Math.min(...leases).toFixed(2)}–${Math.max(...leases).toFixed(2)})`,
      );
    }
  } finally {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await db.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
