import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { a2a, sendParams } from '../helpers/a2a.js';
import { freshDatabase, REAL_POSTGRES, seedEmbeddedDatabase, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { TIMEOUT_SCALE, within } from '../helpers/patience.js';
import { runToExit, startServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';

/**
 * What a start does before and beside its database — settings, flags, files an operator names, ports — is the same
 * on either database: those tests run once, in the pass on the embedded database a first `npm start` uses (CI runs
 * the suite on both; see CONTRIBUTING.md).
 */
const NOT_THE_DATABASE = REAL_POSTGRES && 'embedded only: not about the database (the embedded pass runs it)';

/** A home of this test's own with the run's migrated embedded database in it, removed when the test ends. */
function seededHome(): string {
  const home = tempHome();
  seedEmbeddedDatabase(home);
  after(() => rmSync(home, { recursive: true, force: true }));
  return home;
}

describe('the server process (npm start)', () => {
  let db: TestDatabase;
  let home: string;
  let dbEnv: Record<string, string>;
  before(async () => {
    db = await freshDatabase();
    home = tempHome();
    dbEnv = db.url ? { DATABASE_URL: db.url } : {};
  });
  after(async () => {
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  // Each case is a process of its own that exits at once, side by side. What each setting's refusal says is
  // checked without a process (test/unit/config.test.ts); here, how the process says it: a variable, a flag, a
  // secret that is not echoed.
  describe('configuration', { concurrency: 4, skip: NOT_THE_DATABASE }, () => {
    const cases: [Record<string, string>, string[], RegExp][] = [
      [{ PORT: 'abc' }, [], /PORT must be an integer/],
      [{}, ['--verbose'], /Unknown option '--verbose'/],
      [{ ARBITER_ADMIN_TOKEN: 'secret' }, [], /ARBITER_ADMIN_TOKEN must be "adm_"/],
    ];
    for (const [env, args, expected] of cases) {
      it(`refuses ${JSON.stringify(env)} ${args.join(' ')} naming the variable, once, in one JSON log line`, async () => {
        const res = await runToExit({ ARBITER_HOME: home, ...env }, args);
        assert.equal(res.code, 2, res.stderr);
        const lines = res.stdout.trim().split('\n');
        assert.equal(lines.length, 1, res.stdout);
        const line = JSON.parse(lines[0]) as { level: number; msg: string };
        assert.equal(line.level, 60);
        assert.match(line.msg, expected);
        if (env.ARBITER_ADMIN_TOKEN)
          assert.ok(!res.stdout.includes(env.ARBITER_ADMIN_TOKEN), 'the bad secret is not echoed');
      });
    }

    // The process exits right after the line: it is written whole first, even when it is larger than the pipe
    // holds and the reader is slow (a line whose write was still in flight at the exit was lost, under load).
    it('a refusal larger than the pipe holds is on stdout whole when the process has exited', async () => {
      // Three bad values of 120,000 characters, each named with its value: a line of ~720 KB, more than the
      // ~200 KB a pipe to a child process holds.
      const env = {
        ARBITER_DEFAULT_MODEL: `foo/${'x'.repeat(120_000)}`,
        BIND: `bad host ${'y'.repeat(120_000)}`,
        LOG_LEVEL: `loud${'z'.repeat(120_000)}`,
      };
      const res = await runToExit({ ARBITER_HOME: home, ...env }, []);
      assert.equal(res.code, 2, res.stderr);
      const line = JSON.parse(res.stdout) as { level: number; msg: string };
      assert.equal(line.level, 60);
      for (const value of Object.values(env)) assert.ok(line.msg.includes(JSON.stringify(value)), 'each value, whole');
    });
  });

  it('first start creates and prints the admin token once; data survives a restart; SIGTERM exits cleanly', async () => {
    const agentsDir = join(home, 'agents');
    mkdirSync(agentsDir, { recursive: true });
    writeFileSync(join(agentsDir, 'ok.json'), JSON.stringify({ role: 'fine' }));
    writeFileSync(join(agentsDir, 'mangled.json'), '{nope');

    const first = await startServerProcess({ ARBITER_HOME: home, ...dbEnv });
    after(() => first.child.kill('SIGKILL'));
    const tokenFile = join(home, 'admin_token');
    const adminToken = readFileSync(tokenFile, 'utf8').trim();
    assert.match(adminToken, /^adm_[0-9a-f]{64}$/);
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
    assert.ok(first.stdout().includes(adminToken), 'printed on first start');
    assert.match(first.stdout(), /mangled\.json/, 'the bad agent file is reported by name');

    const http = new HttpClient(first.url);
    assert.equal((await http.get('/v1/health')).status, 200);
    const created = await http.withToken(adminToken).post('/v1/admin/tenants', { name: 'persisted' });
    assert.equal(created.status, 201);
    const tenant = http.withToken(created.body.token.token);
    assert.equal((await tenant.post('/v1/agents', { id: 'kept', role: 'r' })).status, 201);
    const agents = await tenant.get('/v1/agents');
    assert.deepEqual(
      agents.body.items.map((a: { id: string }) => a.id),
      ['index', 'kept', 'ok'],
    );

    // A JSON-RPC call's line says who called which agent, the A2A method and dialect, the task, the error code.
    const kept = a2a(first.url, created.body.token.token, 'kept');
    const sent = await kept.send('hi');
    await kept.get('no-such-task');

    // JSON logs, each request line carrying its request id; no token anywhere.
    // A request's line is written as its response ends: wait for the A2A calls' lines.
    await Promise.all([first.printed(/"a2a_method":"SendMessage"/), first.printed(/"a2a_method":"GetTask"/)]);
    const lines = first
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    const requestLines = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.req);
    assert.ok(requestLines.length >= 3);
    assert.ok(requestLines.every((l) => typeof (l.req as { id?: string }).id === 'string'));
    assert.ok(!lines.join('\n').includes(created.body.token.token));
    const a2aLines = requestLines.filter((l) => l.a2a_method);
    assert.deepEqual(
      a2aLines.map(({ tenant_id, agent_id, a2a_method, dialect, task_id, rpc_error }) => ({
        tenant_id,
        agent_id,
        a2a_method,
        dialect,
        task_id,
        rpc_error,
      })),
      [
        {
          tenant_id: created.body.tenant.id,
          agent_id: 'kept',
          a2a_method: 'SendMessage',
          dialect: '1.0',
          task_id: sent.result?.task.id,
          rpc_error: undefined,
        },
        {
          tenant_id: created.body.tenant.id,
          agent_id: 'kept',
          a2a_method: 'GetTask',
          dialect: '1.0',
          task_id: undefined,
          rpc_error: -32001,
        },
      ],
    );

    // Each line names its actor as the audit log does: the root admin token, the tenant token by its prefix.
    const actorOf = (method: string, path: string) =>
      requestLines.find((l) => {
        const req = l.req as { method: string; url: string };
        return req.method === method && req.url === path;
      })?.actor;
    const prefix = `token:${(created.body.token.token as string).slice(0, 12)}`;
    assert.equal(actorOf('POST', '/v1/admin/tenants'), 'root');
    assert.equal(actorOf('GET', '/v1/agents'), prefix);
    assert.ok(a2aLines.every((l) => l.actor === prefix));
    assert.equal(actorOf('GET', '/v1/health'), undefined, 'an open route has no actor');

    assert.equal(await first.stop('SIGTERM'), 0);

    const second = await startServerProcess({ ARBITER_HOME: home, ...dbEnv });
    after(() => second.child.kill('SIGKILL'));
    try {
      assert.ok(!second.stdout().includes(adminToken), 'not printed again');
      const again = new HttpClient(second.url).withToken(created.body.token.token);
      const list = await again.get('/v1/agents');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.items.map((a: { id: string }) => a.id),
        ['index', 'kept', 'ok'],
      );
      assert.equal((await new HttpClient(second.url).withToken(adminToken).get('/v1/admin/tenants')).status, 200);
    } finally {
      assert.equal(await second.stop('SIGTERM'), 0);
    }
  });

  it(
    'a second process on the same embedded database is refused',
    { skip: REAL_POSTGRES && 'embedded only' },
    async () => {
      const lockHome = tempHome();
      seedEmbeddedDatabase(lockHome);
      const first = await startServerProcess({ ARBITER_HOME: lockHome });
      after(() => first.child.kill('SIGKILL'));
      const second = await runToExit({ ARBITER_HOME: lockHome, PORT: '0' });
      assert.notEqual(second.code, 0);
      // One JSON line that says what to do, and no stack: an expected condition, not a crash.
      const failures = second.stdout.split('\n').filter((l) => l.includes('"level":60') || l.includes('"level":50'));
      assert.equal(failures.length, 1, second.stdout);
      assert.match(failures[0], /in use by process \d+; stop that process/);
      assert.ok(!/\bat \w/.test(second.stdout + second.stderr), 'no stack trace');
      // A lock left by a killed process is taken over (a clean SIGTERM's exit is the first start's test).
      await first.stop('SIGKILL');
      const third = await startServerProcess({ ARBITER_HOME: lockHome });
      assert.equal(await third.stop('SIGTERM'), 0);
      rmSync(lockHome, { recursive: true, force: true });
    },
  );

  it(
    'DATABASE_URL naming a database that does not exist: one clear line, and no admin token made',
    { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
    async () => {
      const missingHome = tempHome();
      const url = new URL(process.env.DATABASE_URL!);
      url.pathname = '/arbiter_no_such_database';
      const res = await runToExit({ ARBITER_HOME: missingHome, DATABASE_URL: url.toString(), PORT: '0' });
      assert.equal(res.code, 1);
      assert.equal(res.stderr, '');
      const lines = res.stdout.trim().split('\n');
      assert.equal(lines.length, 1, res.stdout);
      assert.match(lines[0], /database \\"arbiter_no_such_database\\" does not exist .*create it/);
      assert.ok(!existsSync(join(missingHome, 'admin_token')), 'the admin token waits for a working database');
      rmSync(missingHome, { recursive: true, force: true });
    },
  );

  it('SIGTERM with a run in flight: the grace period, then the run ends canceled and its stream gets the terminal frame', async () => {
    const home2 = tempHome();
    seedEmbeddedDatabase(home2);
    const env = {
      ARBITER_HOME: home2,
      ARBITER_ADMIN_TOKEN: `adm_${'b'.repeat(40)}`,
      // The window in which the test sends a late request (one request after it has seen the shutdown begin).
      ARBITER_SHUTDOWN_GRACE_MS: String(Math.round(4_000 * TIMEOUT_SCALE)),
      ...dbEnv,
    };
    const proc = await startServerProcess(env);
    after(() => proc.child.kill('SIGKILL'));
    const http = new HttpClient(proc.url);
    const created = await http.withToken(env.ARBITER_ADMIN_TOKEN).post('/v1/admin/tenants', { name: 'shutdown' });
    const token = created.body.token.token as string;
    const agent = a2a(proc.url, token);
    const stream = await agent.post('SendStreamingMessage', sendParams('hold'));
    const reader = stream.body!.getReader();
    let text = Buffer.from((await reader.read()).value).toString();
    const taskId = /"id":"([0-9a-f-]{36})"/.exec(text)![1];
    const exited = proc.stop('SIGTERM');
    // During the grace period (it has begun once the server says so) new tasks are refused with a retryable error.
    await proc.printed(/run\(s\) in flight; waiting up to/);
    const refusedBody = await agent.send('late');
    assert.equal(refusedBody.error?.code, -32603);
    assert.match(refusedBody.error.message, /shutting down/);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    assert.equal(await exited, 0);
    assert.match(text, /TASK_STATE_CANCELED/);
    assert.match(text, /server shutting down/);
    const again = await startServerProcess(env);
    try {
      const got = await new HttpClient(again.url).withToken(token).get(`/v1/requests/${taskId}`);
      assert.equal(got.body.state, 'canceled');
      assert.equal(got.body.error, 'server shutting down');
    } finally {
      assert.equal(await again.stop('SIGTERM'), 0);
      rmSync(home2, { recursive: true, force: true });
    }
  });

  it('kill -9 mid-run: the task does not stay working (lease expiry, or restart of the embedded server)', async () => {
    const home3 = tempHome();
    seedEmbeddedDatabase(home3);
    const admin = `adm_${'c'.repeat(40)}`;
    const env = { ARBITER_HOME: home3, ARBITER_ADMIN_TOKEN: admin, ARBITER_LEASE_MS: '1000', ...dbEnv };
    const a = await startServerProcess(env);
    after(() => a.child.kill('SIGKILL'));
    const created = await new HttpClient(a.url).withToken(admin).post('/v1/admin/tenants', { name: 'crash' });
    const token = created.body.token.token as string;
    const taskId = (await a2a(a.url, token).send('hold', { returnImmediately: true })).result.task.id as string;
    if (REAL_POSTGRES) {
      // A second replica on the same database watches the task, then the owner dies.
      const b = await startServerProcess({ ...env, ARBITER_HOME: tempHome() });
      after(() => b.child.kill('SIGKILL'));
      const watch = a2a(b.url, token).subscribe(taskId);
      await watch.opened; // B is watching the task
      await a.stop('SIGKILL');
      // Ended by B's sweep once A's lease (1 s here) has run out; the bound only stops a hang.
      const streamed = JSON.stringify((await within(watch.ended, 'the watch on B to end')).events);
      assert.match(streamed, /TASK_STATE_FAILED/);
      assert.match(streamed, /owner lost/);
      const got = await new HttpClient(b.url).withToken(token).get(`/v1/requests/${taskId}`);
      assert.equal(got.body.state, 'failed');
      assert.equal(got.body.error, 'owner lost');
      assert.equal(await b.stop('SIGTERM'), 0);
    } else {
      await a.stop('SIGKILL');
      const again = await startServerProcess(env);
      try {
        const got = await new HttpClient(again.url).withToken(token).get(`/v1/requests/${taskId}`);
        assert.equal(got.body.state, 'failed');
        assert.equal(got.body.error, 'server restarted');
      } finally {
        assert.equal(await again.stop('SIGTERM'), 0);
      }
    }
    rmSync(home3, { recursive: true, force: true });
  });

  it(
    'an idle server lets its process sleep: its main thread wakes for its own upkeep, under 50 times a second',
    { skip: NOT_THE_DATABASE || (!existsSync('/proc/self/status') && 'reads /proc/<pid>/status (Linux)') },
    async () => {
      const idleHome = seededHome();
      const proc = await startServerProcess({ ARBITER_HOME: idleHome });
      after(() => proc.child.kill('SIGKILL'));
      assert.equal((await new HttpClient(proc.url).get('/v1/health')).status, 200);
      // Each time the main thread blocks waiting for something to happen, then is woken, is a voluntary context
      // switch of its own (the process's status counts the main thread's). With nothing to serve, what wakes it is
      // its timers: their number over a window is at most what they are set to, however slow the machine. The
      // upkeep (quota and usage sync, stats, push poll, leases) is a few a second; a timer every 10 ms (as the
      // Prometheus client's event-loop monitor has by default) alone is a hundred.
      const switches = () => {
        const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${proc.child.pid}/status`, 'utf8'));
        assert.ok(m, 'the status names the voluntary switches');
        return Number(m[1]);
      };
      const seconds = 3;
      const before = switches();
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      const woken = switches() - before;
      assert.ok(woken < 50 * seconds, `woken ${woken} times in ${seconds} s while idle`);
      assert.equal(await proc.stop('SIGTERM'), 0);
    },
  );

  it(
    'ARBITER_ADMIN_TOKEN_FILE: the token is read from the operator’s file (never printed, never changed); a missing file stops the start',
    { skip: NOT_THE_DATABASE },
    async () => {
      const secretHome = seededHome();
      const file = join(secretHome, 'admin-secret');
      const token = `adm_${'s3cr3t'.repeat(6)}`;
      writeFileSync(file, `${token}\n`, { mode: 0o444 });
      const proc = await startServerProcess({ ARBITER_HOME: secretHome, ARBITER_ADMIN_TOKEN_FILE: file, ...dbEnv });
      after(() => proc.child.kill('SIGKILL'));
      try {
        const http = new HttpClient(proc.url);
        assert.equal((await http.withToken(token).get('/v1/admin/tenants')).status, 200);
        assert.equal((await http.withToken(`adm_${'x'.repeat(36)}`).get('/v1/admin/tenants')).status, 401);
        assert.ok(!proc.stdout().includes(token), 'never printed');
        assert.equal(statSync(file).mode & 0o777, 0o444, 'the file is left as it was');
        assert.ok(!existsSync(join(secretHome, 'admin_token')), 'no token file of its own');
      } finally {
        assert.equal(await proc.stop('SIGTERM'), 0);
      }
      const missing = await runToExit({
        ARBITER_HOME: secretHome,
        ARBITER_ADMIN_TOKEN_FILE: join(secretHome, 'nope'),
        ...dbEnv,
      });
      assert.notEqual(missing.code, 0);
      assert.match(missing.stdout, /ARBITER_ADMIN_TOKEN_FILE .*nope cannot be read \(ENOENT\)/);
    },
  );

  it(
    'ARBITER_TRUSTED_ISSUERS_FILE: its issuers are added at start (once), audited as root; a bad file stops the start naming the entry',
    { skip: NOT_THE_DATABASE },
    async () => {
      const issuersHome = seededHome();
      const file = join(issuersHome, 'issuers.json');
      const entry = {
        issuer: 'https://idp.example.com',
        audiences: ['arbiter'],
        tenant_claim: 'org',
        role_claim: 'roles',
      };
      writeFileSync(file, JSON.stringify([entry]));
      const env = { ARBITER_HOME: issuersHome, ARBITER_TRUSTED_ISSUERS_FILE: file, ...dbEnv };
      for (let start = 0; start < 2; start++) {
        const proc = await startServerProcess(env);
        after(() => proc.child.kill('SIGKILL'));
        try {
          const admin = new HttpClient(proc.url).withToken(
            readFileSync(join(issuersHome, 'admin_token'), 'utf8').trim(),
          );
          const listed = await admin.get('/v1/admin/issuers');
          assert.deepEqual(
            listed.body.items.map((i: { issuer: string; tenant_claim: string }) => [i.issuer, i.tenant_claim]),
            [['https://idp.example.com', 'org']],
            'added once, not again on the second start',
          );
          const audit = await admin.get('/v1/admin/audit');
          const rows = audit.body.items.filter((a: { action: string }) => a.action === 'issuer.create');
          assert.deepEqual(
            rows.map((a: { actor_id: string; detail: { from: string } }) => [a.actor_id, a.detail.from]),
            [['root', 'ARBITER_TRUSTED_ISSUERS_FILE']],
          );
        } finally {
          assert.equal(await proc.stop('SIGTERM'), 0);
        }
      }
      writeFileSync(
        file,
        JSON.stringify([
          entry,
          { issuer: 'https://other.example.com', audiences: ['arbiter'], algorithms: ['HS256'], tenant_claim: 'org' },
        ]),
      );
      const bad = await runToExit(env);
      assert.notEqual(bad.code, 0);
      assert.match(
        bad.stdout,
        /ARBITER_TRUSTED_ISSUERS_FILE .*issuers\.json: entry 1: algorithms: algorithms must be a non-empty list of RS256/,
      );
    },
  );

  it('listens where --port/--bind say, over PORT/BIND', { skip: NOT_THE_DATABASE }, async () => {
    const proc = await startServerProcess({ ARBITER_HOME: home, PORT: '1', BIND: '0.0.0.0', ...dbEnv }, [
      '--port',
      '0',
      '--bind',
      '127.0.0.1',
    ]);
    after(() => proc.child.kill('SIGKILL'));
    try {
      assert.match(proc.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await new HttpClient(proc.url).get('/v1/health/ready')).status, 200);
    } finally {
      assert.equal(await proc.stop('SIGINT'), 0);
    }
  });

  it(
    'start-up: a busy port is refused before anything is created; the admin token and the console line are not buried',
    { skip: NOT_THE_DATABASE },
    async () => {
      const blocker = createServer();
      await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
      const busy = String((blocker.address() as AddressInfo).port);
      const fresh = tempHome();
      try {
        const refused = await runToExit({ ARBITER_HOME: fresh, PORT: busy, BIND: '127.0.0.1', ...dbEnv });
        assert.equal(refused.code, 1);
        const lines = refused.stdout.trim().split('\n');
        assert.equal(lines.length, 1, refused.stdout);
        assert.match(lines[0], new RegExp(`cannot listen on port ${busy} \\(EADDRINUSE\\)`));
        assert.deepEqual(readdirSync(fresh), [], 'no embedded database, no admin token');
      } finally {
        blocker.close();
      }
      // The start that follows needs no new database of its own (the first start's test makes one): the run's copy.
      seedEmbeddedDatabase(fresh);
      const proc = await startServerProcess({ ARBITER_HOME: fresh, ...dbEnv });
      after(() => proc.child.kill('SIGKILL'));
      try {
        const out = proc.stdout();
        // Nest's line per module and route is debug: at info level the token is among the first lines.
        assert.ok(!out.includes('Mapped {'), 'no route lines at info level');
        const before = out.slice(0, out.indexOf('Arbiter admin token')).split('\n').length;
        assert.ok(before < 15, `${before} lines before the admin token`);
        // Printed without a terminal too, as a log line.
        const consoleLine = (await within(proc.printed(/^.*Arbiter console: .*$/m), 'the console line'))[0];
        assert.match(JSON.parse(consoleLine).msg, /^Arbiter console: http:\/\/127\.0\.0\.1:\d+\/console\/ \(sign in/);
      } finally {
        assert.equal(await proc.stop('SIGTERM'), 0);
        rmSync(fresh, { recursive: true, force: true });
      }
    },
  );
});
