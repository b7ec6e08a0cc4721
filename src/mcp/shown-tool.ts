import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { stripKnownSecrets } from '../outbound-auth/credentials.js';

/**
 * The shortest value taken for a secret here: a key or a token is longer; a header value shorter (`false`,
 * `default`) is a word the server may well use, and taking it out of every description would garble them.
 */
const MIN_SECRET = 8;

/**
 * A tool as the server listed it, with the entry's secrets (its headers, its credential) and the tokens Arbiter was
 * issued taken out of what it says in words — every `description` and `title`, the tool's and its schema's — since a
 * server may quote what it was sent. Keys, names and the schema's other values are left as they are: a header value
 * such as `false` or `integer` is no secret there, and changing them would break the tool. A tool whose name holds
 * a secret is not offered (undefined). Values shorter than a secret could be are left alone (`MIN_SECRET`). The
 * schema's depth is bounded before (`McpPool.tools`).
 */
export function shownTool(tool: Tool, secrets: readonly string[]): Tool | undefined {
  const name = String(tool.name);
  const long = secrets.filter((s) => s.length >= MIN_SECRET);
  if (stripKnownSecrets(name, long) !== name) return undefined;
  const words = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string') return key === 'description' || key === 'title' ? stripKnownSecrets(v, long) : v;
    if (Array.isArray(v)) return v.map((x) => words(x));
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v))
      Object.defineProperty(out, k, { value: words(x, k), enumerable: true, writable: true, configurable: true });
    return out;
  };
  return words(tool) as Tool;
}
