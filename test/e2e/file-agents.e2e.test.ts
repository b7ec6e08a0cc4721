import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('file-backed agents (ARBITER_HOME/agents/*.json)', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  before(async () => {
    server = await startTestServer({
      prepareHome: (home) => {
        const dir = join(home, 'agents');
        mkdirSync(dir, { recursive: true });
        writeFileSync(
          join(dir, 'librarian.json'),
          JSON.stringify({ role: 'librarian', capabilities: ['/mem', 'cataloguing'] }),
        );
        writeFileSync(
          join(dir, 'critic.json'),
          JSON.stringify({ id: 'critic', agent_def: { role: 'critic', temperature: 0.2 } }),
        );
        writeFileSync(join(dir, 'broken.json'), '{ "role": ');
        writeFileSync(join(dir, 'badfield.json'), JSON.stringify({ temperature: 9 }));
        writeFileSync(join(dir, 'badtool.json'), JSON.stringify({ capabilities: ['/teleport'] }));
        writeFileSync(join(dir, 'index.json'), JSON.stringify({ role: 'impostor' }));
        writeFileSync(join(dir, 'bad name!.json'), JSON.stringify({}));
        writeFileSync(join(dir, 'notes.txt'), 'ignored');
      },
    });
    a = await newTenant(server);
    b = await newTenant(server);
  });
  after(async () => {
    await server.close();
  });

  it('loads the valid files for every tenant, skipping the malformed ones', async () => {
    for (const t of [a, b]) {
      const list = await t.client.get('/v1/agents');
      assert.deepEqual(
        list.body.items.map((x: { id: string; source: string }) => `${x.id}:${x.source}`),
        ['index:builtin', 'critic:file', 'librarian:file'],
      );
    }
    const lib = await a.client.get('/v1/agents/librarian');
    assert.equal(lib.body.agent_def.role, 'librarian');
    assert.equal(lib.body.agent_def.name, 'librarian');
    assert.equal(lib.body.agent_def.max_tokens, 4096);
    assert.deepEqual(lib.body.agent_def.capabilities, ['/mem', 'cataloguing']);
    assert.equal((await a.client.get('/v1/agents/critic')).body.agent_def.temperature, 0.2);
    assert.equal((await a.client.get('/v1/agents/index')).body.agent_def.role, 'master orchestrator');
    for (const id of ['broken', 'badfield', 'badtool'])
      assert.equal((await a.client.get(`/v1/agents/${id}`)).status, 404);
  });

  it('file agents are read-only through the API and their ids are taken', async () => {
    assert.equal((await a.client.patch('/v1/agents/librarian', { role: 'x' })).status, 409);
    assert.equal((await a.client.delete('/v1/agents/librarian')).status, 409);
    assert.equal((await a.client.post('/v1/agents', { id: 'librarian' })).status, 409);
    assert.equal((await a.client.get('/v1/agents/librarian')).body.agent_def.role, 'librarian');
  });

  it('stored agents sort in among file agents', async () => {
    assert.equal((await a.client.post('/v1/agents', { id: 'dreamer' })).status, 201);
    const list = await a.client.get('/v1/agents?limit=2');
    assert.deepEqual(
      list.body.items.map((x: { id: string }) => x.id),
      ['index', 'critic'],
    );
    const next = await a.client.get(`/v1/agents?limit=2&cursor=${list.body.next_cursor}`);
    assert.deepEqual(
      next.body.items.map((x: { id: string }) => x.id),
      ['dreamer', 'librarian'],
    );
    assert.equal(next.body.next_cursor, null);
    // Tenant b does not see a's stored agent.
    const bl = await b.client.get('/v1/agents');
    assert.ok(!bl.body.items.some((x: { id: string }) => x.id === 'dreamer'));
  });
});
