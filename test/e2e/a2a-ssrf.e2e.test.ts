// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeProvider } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse } from '../helpers/a2a.js';
import { startReferenceAgent, type ReferenceAgent } from '../helpers/reference-agents.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('A2A outbound with allow-private off (the default): SSRF refusals, registry reloads', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let t: TestTenant;
  let v1: ReferenceAgent;
  let registryFile: string;

  const writeRegistry = (agents: Record<string, unknown>, file = registryFile): void => {
    writeFileSync(file, JSON.stringify({ agents }, null, 2));
  };

  let n = 0;
  /** Runs `commands` as one scripted response of a fresh agent; returns what the model got back. */
  const runCommands = async (commands: string, tenant: TestTenant) => {
    const id = `cmd-${++n}`;
    fake.scripts.set(id, (c) => (c.call === 1 ? commands : 'done'));
    await newAgent(tenant, { id, model: `openai/${id}` });
    const res = await fetch(`${server.url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    await readSse(res);
    const calls = fake.requests.filter((r) => r.body.model === id);
    const last = calls.at(-1)!.body.messages;
    return { fed: calls.length > 1 ? (last[last.length - 1].content as string) : '' };
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    v1 = await startReferenceAgent('v1');
    server = await startTestServer({
      env: { OPENAI_BASE_URL: `${fake.url}/v1`, ARBITER_DEFAULT_MODEL: 'openai/master' },
    });
    registryFile = join(server.home, 'a2a_agents.json');
    writeRegistry({
      loopback: { url: `${v1.url}/rpc` },
      ten: { url: 'http://10.0.0.1/rpc' },
      metadata: { url: 'http://169.254.169.254/rpc' },
      named: { url: `http://localhost:${new URL(v1.url).port}/rpc` },
    });
    t = await newTenant(server, 'strict');
  });
  after(async () => {
    await server.close();
    await v1.close();
    await fake.stop();
  });

  it('SSRF: with allow-private off, loopback, 10/8, metadata and names resolving to them are refused', async () => {
    const { fed } = await runCommands(
      '/a2a call loopback hi\n/a2a call ten hi\n/a2a call metadata hi\n/a2a call named hi',
      t,
    );
    const results = fed.split(/\n(?=\[\/a2a )/);
    assert.match(results[0], /ERR: card fetch failed: 127\.0\.0\.1 is a loopback address \(blocked\)/);
    assert.match(results[1], /ERR: card fetch failed: 10\.0\.0\.1 is a private address \(blocked\)/);
    assert.match(results[2], /ERR: card fetch failed: 169\.254\.169\.254 is a linkLocal address \(blocked\)/);
    assert.match(results[3], /ERR: card fetch failed: localhost resolves to a loopback address \(blocked\)/);
  });

  it('the registry is reloaded after an edit; a malformed file leaves the previous one in force', async () => {
    const second = registryFile;
    writeRegistry({ fresh_one: { url: 'https://example.com/a2a/x' } }, second);
    await new Promise((r) => setTimeout(r, 300));
    let { fed } = await runCommands('/a2a list', t);
    assert.match(fed, /fresh_one — /);
    assert.ok(!fed.includes('loopback —'));
    writeFileSync(second, JSON.stringify({ agents: { bad: { url: 'ftp://x' } } }));
    await new Promise((r) => setTimeout(r, 300));
    ({ fed } = await runCommands('/a2a list', t));
    assert.match(fed, /fresh_one — /, 'the previous registry stays');
    writeFileSync(second, '{ not json');
    await new Promise((r) => setTimeout(r, 300));
    ({ fed } = await runCommands('/a2a list', t));
    assert.match(fed, /fresh_one — /);
    writeRegistry({}, second);
    await new Promise((r) => setTimeout(r, 300));
    ({ fed } = await runCommands('/a2a list', t));
    assert.match(fed, /\[\/a2a list\]\nno remote agents configured\n/);
  });
});
