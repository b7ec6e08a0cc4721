import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { newTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('admin: registries as loaded (/v1/admin/registries/*)', () => {
  let server: TestServer;
  before(async () => {
    // The registries read `*_env` variables from the process environment.
    process.env.ARBITER_TEST_REG_SET = 'env-secret-789';
    server = await startTestServer({
      prepareHome: (home) => {
        writeFileSync(
          join(home, 'a2a_agents.json'),
          JSON.stringify({
            agents: {
              weather: {
                url: 'https://weather.example.test/a2a?api_key=query-secret-123',
                auth: { type: 'bearer', token: 'inline-secret-456' },
              },
              open: { url: 'http://127.0.0.1:9/a2a/open', card_url: 'http://127.0.0.1:9/card.json#frag' },
              reviewer: { url: 'http://127.0.0.1:9/a2a/reviewer', auth: { token_env: 'ARBITER_TEST_REG_UNSET' } },
            },
          }),
        );
        writeFileSync(
          join(home, 'mcp_servers.json'),
          JSON.stringify({
            mcpServers: {
              files: {
                type: 'stdio',
                command: 'node',
                args: ['server.js', '--api-key', 'arg-secret-000'],
                env_env: { KEY: 'ARBITER_TEST_REG_SET' },
                description: 'local files',
              },
              search: {
                type: 'http',
                url: 'http://127.0.0.1:9/mcp?token=mcp-query-secret',
                headers: { 'X-Api-Key': 'header-secret-111' },
                headers_env: { Authorization: 'ARBITER_TEST_REG_UNSET2' },
              },
            },
          }),
        );
      },
    });
  });
  after(async () => {
    delete process.env.ARBITER_TEST_REG_SET;
    await server.close();
  });

  it('lists remote A2A agents without tokens or URL queries, naming unset variables', async () => {
    const res = await server.admin.get('/v1/admin/registries/a2a-agents');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.error, null);
    assert.match(res.body.file, /a2a_agents\.json$/);
    assert.deepEqual(res.body.items, [
      {
        name: 'open',
        url: 'http://127.0.0.1:9/a2a/open',
        card_url: 'http://127.0.0.1:9/card.json',
        auth: 'none',
        missing_env: [],
      },
      {
        name: 'reviewer',
        url: 'http://127.0.0.1:9/a2a/reviewer',
        card_url: null,
        auth: 'bearer',
        missing_env: ['ARBITER_TEST_REG_UNSET'],
      },
      { name: 'weather', url: 'https://weather.example.test/a2a', card_url: null, auth: 'bearer', missing_env: [] },
    ]);
    assert.doesNotMatch(res.text, /secret/);
  });

  it('lists MCP servers without arguments, headers, environment values or URL queries', async () => {
    const res = await server.admin.get('/v1/admin/registries/mcp-servers');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.error, null);
    const [files, search] = res.body.items;
    assert.deepEqual(files, {
      name: 'files',
      transport: 'stdio',
      description: 'local files',
      command: 'node',
      args_count: 3,
      missing_env: [],
    });
    assert.equal(search.transport, 'http');
    assert.equal(search.url, 'http://127.0.0.1:9/mcp');
    assert.deepEqual(search.missing_env, ['ARBITER_TEST_REG_UNSET2']);
    assert.doesNotMatch(res.text, /secret/);
  });

  it('shows a load error while the last good registry stays in force', async () => {
    writeFileSync(join(server.home, 'a2a_agents.json'), '{"agents": {"x": {"url": "ftp://nope"}}}');
    const res = await server.admin.get('/v1/admin/registries/a2a-agents');
    assert.equal(res.status, 200);
    assert.match(res.body.error, /agents\.x\.url must be an absolute http\(s\) URL/);
    assert.equal(res.body.items.length, 3, 'the previous registry is still listed');
  });

  it('is for the admin token only: a tenant token gets 403, none 401', async () => {
    const t = await newTenant(server);
    for (const path of ['/v1/admin/registries/a2a-agents', '/v1/admin/registries/mcp-servers']) {
      assert.equal((await t.client.get(path)).status, 403, path);
      assert.equal((await server.http.get(path)).status, 401, path);
    }
  });
});
