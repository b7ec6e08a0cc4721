// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { McpRegistryError, parseMcpRegistry } from '../../src/mcp/mcp-registry.service.js';

const parse = (doc: unknown, env: NodeJS.ProcessEnv = {}) =>
  parseMcpRegistry(typeof doc === 'string' ? doc : JSON.stringify(doc), env, '/etc/arbiter');
const problem = (doc: unknown): string => {
  try {
    parse(doc);
  } catch (err) {
    assert.ok(err instanceof McpRegistryError);
    return err.message;
  }
  throw new Error('no problem reported');
};

describe('mcp_servers.json parsing (the Claude Desktop / Cursor shape, *_env secrets)', () => {
  it('stdio and streamable HTTP entries, secrets from the environment, relative cwd against the file', () => {
    const { servers, warnings } = parse(
      {
        mcpServers: {
          files: { command: 'node', args: ['srv.js'], env: { A: '1' }, env_env: { TOKEN: 'HOST_TOKEN' }, cwd: 'data' },
          remote: {
            url: 'https://mcp.example.com/mcp',
            headers_env: { 'X-Api-Key': 'HOST_KEY' },
            auth: { token_env: 'NOPE' },
          },
          off: { command: 'x', disabled: true },
        },
      },
      { HOST_TOKEN: 't0k', HOST_KEY: 'k3y' },
    );
    assert.deepEqual([...servers.keys()], ['files', 'remote']);
    const files = servers.get('files')!;
    assert.equal(files.transport, 'stdio');
    assert.deepEqual(files.transport === 'stdio' && [files.env, files.cwd], [
      { A: '1', TOKEN: 't0k' },
      '/etc/arbiter/data',
    ]);
    const remote = servers.get('remote')!;
    assert.deepEqual(remote.transport === 'http' && remote.headers, { 'X-Api-Key': 'k3y' });
    assert.deepEqual(remote.missingEnv, ['NOPE']);
    assert.match(warnings[0], /environment variable NOPE is not set/);
  });

  it('refuses a malformed file with the path of the bad field, never quoting its content', () => {
    const cut = problem('{"mcpServers": {"a": {"command": "x", "env": {"K": "sk-SECRET');
    assert.match(cut, /^not valid JSON: unterminated string at line 1, column \d+$/);
    assert.ok(!problem('{"mcpServers": {"a": {"env": "sk-SECRET" x}}}').includes('SECRET'));
    assert.equal(problem({ servers: {} }), 'unknown field "servers"');
    assert.equal(
      problem({ mcpServers: { 'bad name': { command: 'x' } } }),
      'mcpServers.bad name: a name must match [A-Za-z0-9][A-Za-z0-9_.-]{0,63}',
    );
    assert.match(problem({ mcpServers: { a: { command: 5 } } }), /^mcpServers\.a\.command is required/);
    assert.match(
      problem({ mcpServers: { a: { command: 'x', args: [1] } } }),
      /^mcpServers\.a\.args must be an array of strings/,
    );
    assert.match(problem({ mcpServers: { a: { command: 'x', autoApprove: [] } } }), /unknown field "autoApprove"/);
    assert.match(
      problem({ mcpServers: { a: { type: 'sse', url: 'http://x/sse' } } }),
      /SSE transport is not supported/,
    );
    assert.match(problem({ mcpServers: { a: { url: 'ftp://x' } } }), /must be an absolute http\(s\) URL/);
    assert.match(problem({ mcpServers: { a: { url: 'http://u:p@x/' } } }), /must not carry credentials/);
    assert.match(
      problem({ mcpServers: { a: { url: 'http://x/', headers: { 'X-A': 'a\nb' } } } }),
      /headers\.X-A must be a string/,
    );
    assert.match(
      problem({ mcpServers: { a: { command: 'x', env_env: { K: 'not a name' } } } }),
      /env_env\.K must be a string naming/,
    );
    // Written as text: an object literal's `__proto__` sets its prototype, as JSON.parse's own key did in the map.
    assert.equal(
      problem('{"mcpServers": {"a": {"url": "http://x/", "headers": {"__proto__": "v"}}}}'),
      'mcpServers.a.headers: "__proto__" may not be a key here',
    );
    assert.equal(
      problem('{"mcpServers": {"a": {"command": "x", "env_env": {"__proto__": "HOME"}}}}'),
      'mcpServers.a.env_env: "__proto__" may not be a key here',
    );
  });
});
