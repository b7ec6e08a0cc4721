import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { readSse } from '../helpers/a2a.js';
import { startVoltLike, type PeerAgent } from '../helpers/peer-agents.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';

describe('tenant registries on two replicas', { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' }, () => {
  let db: TestDatabase;
  let fake: FakeProvider;
  let alpha: PeerAgent;
  let beta: PeerAgent;
  let a: ServerProcess;
  let b: ServerProcess;
  let token: string;
  const homes = [tempHome(), tempHome()];
  const admin = `adm_${'t'.repeat(40)}`;
  const key = randomBytes(32).toString('base64');

  /** Runs `/a2a …` as the first answer of a scripted agent, on one replica; returns what the model got back. */
  let n = 0;
  const run = async (on: ServerProcess, command: string): Promise<string> => {
    const model = `rep-${++n}`;
    fake.scripts.set(model, (c) => (c.call === 1 ? command : 'done'));
    const client = new HttpClient(on.url).withToken(token);
    assert.equal((await client.post('/v1/agents', { id: model, model: `openai/${model}` })).status, 201);
    const res = await fetch(`${on.url}/v1/agents/${model}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    await readSse(res);
    const sent = fake.requests.filter((r) => r.body.model === model).at(-1)!;
    return sent.body.messages.at(-1).content as string;
  };

  before(async () => {
    db = await freshDatabase();
    fake = new FakeProvider();
    await fake.start();
    alpha = await startVoltLike('alpha');
    beta = await startVoltLike('beta');
    const env = (home: string) => ({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      DATABASE_URL: db.url!,
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ARBITER_DEFAULT_MODEL: 'echo',
      ARBITER_A2A_ALLOW_PRIVATE: 'true',
      ARBITER_A2A_CARD_TTL_MS: '0',
      ARBITER_SECRETS_KEY: key,
    });
    [a, b] = await Promise.all([startServerProcess(env(homes[0])), startServerProcess(env(homes[1]))]);
    const created = await new HttpClient(a.url).withToken(admin).post('/v1/admin/tenants', { name: 'reg-replicas' });
    token = created.body.token.token as string;
  });
  after(async () => {
    await a?.stop('SIGTERM');
    await b?.stop('SIGTERM');
    await alpha?.close();
    await beta?.close();
    await fake?.stop();
    await db?.drop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  it('an entry created or changed on A is what B uses as soon as A answered', async () => {
    // B reads (and caches) the tenant's empty registry first.
    assert.match(await run(b, '/a2a call peer hi'), /ERR: no remote agent named 'peer'/);
    const onA = new HttpClient(a.url).withToken(token);
    const created = await onA.post('/v1/remote-agents', {
      name: 'peer',
      url: `${beta.url}/a2a/beta`,
      card_url: `${beta.url}/.well-known/beta/agent-card.json`,
      auth: { type: 'bearer', token: 'sealed-on-a' },
    });
    assert.equal(created.status, 201, created.text);
    assert.match(await run(b, '/a2a call peer hello'), /\nbeta heard: hello\n/);
    const patched = await onA.patch('/v1/remote-agents/peer', {
      url: `${alpha.url}/a2a/alpha`,
      card_url: `${alpha.url}/.well-known/alpha/agent-card.json`,
      // Another origin: the credential is given again (a stored one goes only where it went before).
      auth: { type: 'bearer', token: 'sealed-on-a-for-alpha' },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.match(await run(b, '/a2a call peer again'), /\nalpha heard: again\n/);
    assert.equal((await onA.delete('/v1/remote-agents/peer')).status, 204);
    assert.match(await run(b, '/a2a call peer gone'), /ERR: no remote agent named 'peer'/);
  });
});
