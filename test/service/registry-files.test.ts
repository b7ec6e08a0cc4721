import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { RemoteRegistry } from '../../src/a2a-outbound/remote-registry.service.js';
import { loadConfig } from '../../src/config/app-config.js';
import { ConfigModule } from '../../src/config/config.module.js';
import { McpRegistry } from '../../src/mcp/mcp-registry.service.js';

/** Keeps what the registries log, as `context: message`. */
class LogLines implements LoggerService {
  readonly lines: string[] = [];
  log(message: string, context?: string): void {
    this.lines.push(`${context}: ${message}`);
  }
  error(message: string, _trace?: string, context?: string): void {
    this.lines.push(`${context}: ${message}`);
  }
  warn(message: string, context?: string): void {
    this.lines.push(`${context}: ${message}`);
  }
}

/**
 * Both registry services on the shared loader, wired by Nest as the app wires them: the file under
 * ARBITER_HOME, loaded at init, the same log lines and `lastError` as each had on its own.
 */
describe('registry files: RemoteRegistry and McpRegistry on the shared loader', () => {
  let home: string;
  let moduleRef: TestingModule;
  let remotes: RemoteRegistry;
  let mcp: McpRegistry;
  const logs = new LogLines();
  const a2aFile = () => join(home, 'a2a_agents.json');
  const mcpFile = () => join(home, 'mcp_servers.json');

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'arbiter-registries-'));
    process.env.ARBITER_TEST_REGISTRY_TOKEN = 'env-token-123';
    writeFileSync(
      a2aFile(),
      JSON.stringify({
        agents: {
          weather: { url: 'https://weather.example/a2a/', auth: { token_env: 'ARBITER_TEST_REGISTRY_TOKEN' } },
        },
      }),
    );
    writeFileSync(
      mcpFile(),
      JSON.stringify({ mcpServers: { files: { command: 'node', env_env: { KEY: 'ARBITER_TEST_REGISTRY_UNSET' } } } }),
    );
    moduleRef = await Test.createTestingModule({
      imports: [ConfigModule.forRoot(loadConfig({ ARBITER_HOME: home }))],
      providers: [RemoteRegistry, McpRegistry],
    }).compile();
    moduleRef.useLogger(logs);
    await moduleRef.init();
    remotes = moduleRef.get(RemoteRegistry);
    mcp = moduleRef.get(McpRegistry);
  });
  after(async () => {
    await moduleRef.close();
    delete process.env.ARBITER_TEST_REGISTRY_TOKEN;
    rmSync(home, { recursive: true, force: true });
  });

  it('loads both files at init, resolving *_env references from the process environment', () => {
    assert.equal(remotes.path, a2aFile());
    assert.equal(mcp.path, mcpFile());
    assert.deepEqual(remotes.get('weather'), {
      name: 'weather',
      url: 'https://weather.example/a2a',
      auth: { type: 'bearer', token: 'env-token-123' },
    });
    assert.deepEqual(mcp.get('files')?.missingEnv, ['ARBITER_TEST_REGISTRY_UNSET']);
    assert.deepEqual(logs.lines, [
      `A2aRegistry: loaded 1 remote A2A agent(s) from ${a2aFile()}`,
      `McpRegistry: ${mcpFile()}: mcpServers.files.env_env.KEY: environment variable ARBITER_TEST_REGISTRY_UNSET is not set; the server cannot be used`,
      `McpRegistry: loaded 1 MCP server(s) from ${mcpFile()}`,
    ]);
  });

  it('a bad edit keeps the last good registry, logged and shown with the bad field; a good one replaces it', () => {
    logs.lines.length = 0;
    writeFileSync(a2aFile(), JSON.stringify({ agents: { weather: { url: 'ftp://weather.example/' } } }));
    writeFileSync(mcpFile(), JSON.stringify({ mcpServers: { files: { type: 'sse', url: 'https://h/' } } }));
    assert.equal(remotes.list().length, 1);
    assert.equal(mcp.list().length, 1);
    assert.equal(remotes.lastError, `${a2aFile()}: agents.weather.url must be an absolute http(s) URL`);
    assert.equal(
      mcp.lastError,
      `${mcpFile()}: mcpServers.files.type: the deprecated SSE transport is not supported; use streamable HTTP`,
    );
    assert.deepEqual(logs.lines, [
      `A2aRegistry: invalid A2A registry ${a2aFile()}: agents.weather.url must be an absolute http(s) URL; keeping the previous registry (1 agent(s))`,
      `McpRegistry: invalid MCP registry ${mcpFile()}: mcpServers.files.type: the deprecated SSE transport is not supported; use streamable HTTP; keeping the previous registry (1 server(s))`,
    ]);

    logs.lines.length = 0;
    writeFileSync(
      mcpFile(),
      JSON.stringify({ mcpServers: { docs: { url: 'https://docs.example/mcp' }, more: { command: 'x' } } }),
    );
    assert.deepEqual(
      mcp.list().map((s) => s.name),
      ['docs', 'more'],
    );
    assert.equal(mcp.lastError, null);
    assert.deepEqual(logs.lines, [`McpRegistry: loaded 2 MCP server(s) from ${mcpFile()}`]);
  });

  it('a removed file empties its registry and says so', () => {
    logs.lines.length = 0;
    rmSync(a2aFile());
    assert.deepEqual(remotes.list(), []);
    assert.equal(remotes.lastError, null);
    assert.deepEqual(logs.lines, [`A2aRegistry: ${a2aFile()} is gone: no remote agents configured`]);
  });
});
