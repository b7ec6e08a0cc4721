// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { pushSecretAad } from '../../src/push/push-secrets.js';
import { keyIdOf, SecretBox } from '../../src/secrets/secret-box.js';
import { a2a, waitFor } from '../helpers/a2a.js';
import { freshDatabase, type TestDatabase } from '../helpers/database.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, tempHome, type TestServer } from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

interface Row {
  id: string;
  tenant_id: string;
  task_id: string;
  config_id: string;
  token: string | null;
  credentials: string | null;
}

const K1 = randomBytes(32);
const K2 = randomBytes(32);
const box = (key: Buffer, previous: Buffer[] = []) =>
  new SecretBox(
    { kid: keyIdOf(key), key },
    previous.map((k) => ({ kid: keyIdOf(k), key: k })),
  );

/** Runs `npm run secrets:rotate`'s entry on the given home and database. */
async function rotate(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    ['--import', './dist/test/helpers/loopback-only.js', 'dist/src/cli/rotate-secrets.js'],
    {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
      stdio: 'pipe',
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, out };
}

describe('push webhook credentials at rest: sealed with the key, rotated by secrets:rotate', () => {
  const receiver = new WebhookReceiver();
  const home = tempHome();
  let db: TestDatabase;
  let server: TestServer | undefined;
  let tenant: TestTenant;
  let plainTask: string;
  let sealedTask: string;

  const start = async (env: Record<string, string>) => {
    server = await startTestServer({ home, db, env: { ARBITER_PUSH_ALLOWLIST: `127.0.0.1:${receiver.port}`, ...env } });
    return server;
  };
  const stop = async () => {
    await server?.close();
    server = undefined;
  };
  const rows = async (s: TestServer): Promise<Row[]> =>
    s.running.app
      .get(DataSource)
      .query(`SELECT id, tenant_id, task_id, config_id, token, credentials FROM push_configs`);
  const held = async (s: TestServer, token: string): Promise<string> => {
    const r = await a2a(s.url, token).send('hold', { returnImmediately: true });
    return (r.result as { task: { id: string } }).task.id;
  };
  const createConfig = async (s: TestServer, taskId: string, id: string, token: string, credentials?: string) => {
    const r = await a2a(s.url, tenant.token).call('CreateTaskPushNotificationConfig', {
      taskId,
      id,
      url: receiver.url,
      token,
      ...(credentials ? { authentication: { scheme: 'Bearer', credentials } } : {}),
    });
    assert.ok(!r.error, JSON.stringify(r.error));
  };
  const dbEnv = (): Record<string, string> => ({ ARBITER_HOME: home, ...(db.url ? { DATABASE_URL: db.url } : {}) });

  before(async () => {
    await receiver.start();
    db = await freshDatabase();
  });
  after(async () => {
    await stop();
    await receiver.stop();
    await db.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('without a key, credentials are stored as they come, marked plain', async (t) => {
    t.after(stop);
    const s = await start({});
    tenant = await newTenant(s);
    plainTask = await held(s, tenant.token);
    await createConfig(s, plainTask, 'p1', 'token-plain');
    assert.deepEqual(
      (await rows(s)).map((r) => r.token),
      ['plain:token-plain'],
    );
    await stop();
  });

  it('with a key, credentials are sealed (bound to their config), delivered as given; a moved ciphertext does not open', async (t) => {
    t.after(stop);
    const s = await start({ ARBITER_SECRETS_KEY: K1.toString('base64') });
    sealedTask = await held(s, tenant.token);
    await createConfig(s, sealedTask, 'c1', 'token-one', 'cred-one');
    await createConfig(s, sealedTask, 'c2', 'token-two');
    const stored = await rows(s);
    const c1 = stored.find((r) => r.config_id === 'c1')!;
    assert.match(c1.token!, new RegExp(`^v1:${keyIdOf(K1)}:`));
    assert.match(c1.credentials!, new RegExp(`^v1:${keyIdOf(K1)}:`));
    assert.ok(!JSON.stringify(stored).includes('token-one') && !JSON.stringify(stored).includes('cred-one'));
    // c1's sealed token copied into c2's row: bound to c1, it opens for no other config.
    await s.running.app.get(DataSource).query(`UPDATE push_configs SET token = $1 WHERE config_id = 'c2'`, [c1.token]);
    for (const id of [sealedTask, plainTask]) await a2a(s.url, tenant.token).call('CancelTask', { id });
    const c2 = (await rows(s)).find((r) => r.config_id === 'c2')!;
    await waitFor(async () => {
      const res = await s.as(tenant.token).get(`/v1/requests/${sealedTask}/push-configs`);
      const view = (res.body.items as { id: string; last_error: string | null }[]).find((d) => d.id === 'c2');
      return view?.last_error ? view.last_error : undefined;
    }).then((error) => assert.match(error, /stored credentials do not open \(tampered\)/));
    const byConfig = (id: string) => receiver.accepted.filter((d) => d.deliveryId.startsWith(`${id}:`));
    await waitFor(async () =>
      byConfig(c1.id).length > 0 &&
      receiver.accepted.some((d) => d.headers['x-a2a-notification-token'] === 'token-plain')
        ? true
        : undefined,
    );
    for (const d of byConfig(c1.id)) {
      assert.equal(d.headers['x-a2a-notification-token'], 'token-one');
      assert.equal(d.headers.authorization, 'Bearer cred-one');
    }
    assert.equal(byConfig(c2.id).length, 0, 'nothing is sent with a secret that does not open');
    await stop();
  });

  it('secrets:rotate seals plain values and those under a previous key under the current one, and names what does not open', async () => {
    const dir = tempHome();
    writeFileSync(join(dir, 'previous'), `${K1.toString('base64')}\n`);
    const noKey = await rotate(dbEnv());
    assert.equal(noKey.code, 1);
    assert.match(noKey.out, /set ARBITER_SECRETS_KEY or ARBITER_SECRETS_KEY_FILE/);
    const r = await rotate({
      ...dbEnv(),
      ARBITER_SECRETS_KEY: K2.toString('base64'),
      ARBITER_SECRETS_PREVIOUS_KEYS_FILE: join(dir, 'previous'),
    });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /did not open/);
    const s = await start({ ARBITER_SECRETS_KEY: K2.toString('base64') });
    const after = await rows(s);
    const open = (row: Row, field: 'token' | 'credentials') =>
      box(K2).open(row[field]!, pushSecretAad(row.tenant_id, row.task_id, row.config_id, field));
    const p1 = after.find((x) => x.config_id === 'p1')!;
    const c1 = after.find((x) => x.config_id === 'c1')!;
    const c2 = after.find((x) => x.config_id === 'c2')!;
    assert.equal(open(p1, 'token'), 'token-plain');
    assert.equal(open(c1, 'token'), 'token-one');
    assert.equal(open(c1, 'credentials'), 'cred-one');
    assert.match(c2.token!, new RegExp(`^v1:${keyIdOf(K1)}:`), 'left as it was');
    assert.match(r.out, new RegExp(c2.id));
    assert.ok(!r.out.includes('token-one') && !r.out.includes('cred-one'));
    rmSync(dir, { recursive: true, force: true });
  });
});
