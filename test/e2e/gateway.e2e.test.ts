import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/a2a.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { portForProgram } from '../helpers/ports.js';
import { tempHome } from '../helpers/server.js';

/** nginx from the machine (CI installs Debian's `nginx-light` when missing); outside CI the test is skipped without it. */
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);
const skip = !REAL_POSTGRES
  ? 'needs a PostgreSQL server'
  : !NGINX && !process.env.CI
    ? 'nginx is not installed'
    : false;

/** The compose topology as processes: two replicas on one PostgreSQL behind nginx with deploy/gateway's config. */
describe('behind the gateway (deploy/gateway, as in compose.yaml)', { skip }, () => {
  let db: TestDatabase;
  let replicas: ServerProcess[] = [];
  let nginx: ChildProcess;
  let dir: string;
  let gateway: string;
  let token: string;
  const admin = `adm_${'g'.repeat(40)}`;

  before(async () => {
    db = await freshDatabase();
    const port = await portForProgram();
    gateway = `http://127.0.0.1:${port}`;
    const env = (home: string) => ({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      DATABASE_URL: db.url!,
      ARBITER_TRUST_PROXY: 'true',
      ARBITER_PUBLIC_BASE_URL: gateway,
      ARBITER_DEFAULT_MODEL: 'echo',
    });
    // Started together: replicas that start at once take turns on the migrations (an advisory lock).
    replicas = await Promise.all([startServerProcess(env(tempHome())), startServerProcess(env(tempHome()))]);
    dir = mkdtempSync(join(tmpdir(), 'arbiter-gw-'));
    const upstream = (s: ServerProcess) => new URL(s.url).host;
    const site = readFileSync('deploy/gateway/arbiter.conf.template', 'utf8')
      .replaceAll('${ARBITER_UPSTREAM_1}', upstream(replicas[0]))
      .replaceAll('${ARBITER_UPSTREAM_2}', upstream(replicas[1]))
      .replaceAll('${GATEWAY_LISTEN}', `127.0.0.1:${port}`);
    assert.ok(!/\$\{[A-Z_0-9]+\}/.test(site), 'every template variable is rendered');
    writeFileSync(join(dir, 'site.conf'), site);
    writeFileSync(
      join(dir, 'nginx.conf'),
      [
        'worker_processes 1;',
        `pid ${dir}/nginx.pid;`,
        'error_log stderr warn;',
        'events { worker_connections 256; }',
        'http {',
        '  access_log off;',
        `  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;`,
        `  fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`,
        `  include ${dir}/site.conf;`,
        '}',
      ].join('\n'),
    );
    nginx = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'pipe' });
    let err = '';
    nginx.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    // Up when it answers (or given up on if it exits, or after `PATIENCE_MS`).
    await waitFor(async () => {
      if (nginx.exitCode !== null) throw new Error(`the gateway did not start: ${err}`);
      return (await fetch(`${gateway}/v1/health`).then(
        (r) => r.ok,
        () => false,
      ))
        ? true
        : undefined;
    });
    const created = await new HttpClient(gateway).withToken(admin).post('/v1/admin/tenants', { name: 'gw' });
    assert.equal(created.status, 201, created.text);
    token = created.body.token.token;
  });
  after(async () => {
    nginx?.kill('SIGTERM');
    if (nginx && nginx.exitCode === null) await once(nginx, 'exit');
    for (const r of replicas) await r.stop();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const via = (path: string, init: RequestInit = {}) =>
    fetch(`${gateway}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'a2a-version': '1.0', ...(init.headers ?? {}) },
    });

  it('load-balances over both replicas, and a card fetched through the gateway names the gateway', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const res = await via('/v1/a2a/agents/index/.well-known/agent-card.json');
      assert.equal(res.status, 200);
      seen.add(res.headers.get('x-upstream') ?? '');
      const card: any = await res.json();
      for (const i of card.supportedInterfaces) assert.ok(i.url.startsWith(`${gateway}/v1/a2a/agents/index`), i.url);
    }
    assert.deepEqual([...seen].sort(), replicas.map((r) => new URL(r.url).host).sort());
  });

  it('a stream started on one replica is cancelled through the other; the stream ends canceled', async () => {
    const stream = await via('/v1/a2a/agents/index/message:stream', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold' }] },
      }),
    });
    assert.equal(stream.status, 200);
    const streamedBy = stream.headers.get('x-upstream');
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/"id":"[0-9a-f-]{36}"/.test(text)) {
      const { value, done } = await reader.read();
      assert.ok(!done, `the stream ended before its task: ${text}`);
      text += value;
    }
    const taskId = /"task":\{"id":"([0-9a-f-]{36})"/.exec(text)?.[1];
    assert.ok(taskId, text);
    // nginx round-robin with one worker: the next request goes to the other replica (checked, not assumed).
    const cancel = await via(`/v1/a2a/agents/index/tasks/${taskId}:cancel`, { method: 'POST' });
    assert.equal(cancel.status, 200, await cancel.clone().text());
    assert.notEqual(cancel.headers.get('x-upstream'), streamedBy, 'cancelled through the other replica');
    assert.equal(((await cancel.json()) as any).status.state, 'TASK_STATE_CANCELED');
    for (;;) {
      const { value, done } = await reader.read();
      if (value) text += value;
      if (done) break;
    }
    assert.match(text, /TASK_STATE_CANCELED/);
  });
});
