import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { shownTool } from '../../src/mcp/shown-tool.js';

const KEY = 'sk-live-0123456789abcdef';

describe("an MCP server's tool as the model is shown it (src/mcp/shown-tool.ts)", () => {
  const tool: Tool = {
    name: 'query',
    title: `Query (key ${KEY})`,
    description: `Query the default database; sent ${KEY}`,
    inputSchema: {
      type: 'object',
      properties: { limit: { type: 'integer', default: 10, description: `at most 10, for ${KEY}` } },
      required: ['limit'],
      additionalProperties: false,
    },
  };

  it('the secrets come out of its words — titles and descriptions at any depth — and nothing else changes', () => {
    // Header values that are words of JSON Schema or of the tool: no part of the tool is touched by them.
    const shown = shownTool(tool, [KEY, 'false', 'integer', 'default', 'query', 'limit'])!;
    assert.equal(shown.name, 'query');
    assert.equal(shown.title, 'Query (key [redacted])');
    assert.equal(shown.description, 'Query the default database; sent [redacted]');
    assert.deepEqual(shown.inputSchema, {
      type: 'object',
      properties: { limit: { type: 'integer', default: 10, description: 'at most 10, for [redacted]' } },
      required: ['limit'],
      additionalProperties: false,
    });
    assert.ok(!JSON.stringify(shown).includes(KEY));
  });

  it('a tool whose name holds a secret is not offered; one with no secret in it is the same object', () => {
    assert.equal(shownTool({ ...tool, name: `q_${KEY}` }, [KEY]), undefined);
    const plain: Tool = { name: 'echo', inputSchema: { type: 'object' } };
    assert.deepEqual(shownTool(plain, [KEY]), plain);
  });

  it('a key `__proto__` in a schema stays a key of the copy, not its prototype', () => {
    const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}') as Tool['inputSchema'];
    const shown = shownTool({ name: 'p', inputSchema: schema }, [KEY])!;
    assert.ok(Object.hasOwn(shown.inputSchema.properties as object, '__proto__'));
  });
});
