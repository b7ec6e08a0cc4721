/**
 * The slash-command tools an agent can be granted through a `/…` entry in its
 * `capabilities`. The orchestrator's tool table implements exactly these.
 * `/mcp:<server>` grants `/mcp` for the named MCP servers only.
 */
export const KNOWN_TOOLS = ['/agent', '/parallel', '/write', '/mem', '/fetch', '/a2a', '/mcp', '/search'] as const;
export type ToolName = (typeof KNOWN_TOOLS)[number];

/** An MCP server's name in `mcp_servers.json` (and in `/mcp:<server>` grants). */
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function isKnownTool(entry: string): entry is ToolName {
  return (KNOWN_TOOLS as readonly string[]).includes(entry);
}

/** A `/…` capability entry: a known tool, or `/mcp:<server>`. */
export function isToolGrant(entry: string): boolean {
  if (isKnownTool(entry)) return true;
  return entry.startsWith('/mcp:') && MCP_SERVER_NAME.test(entry.slice('/mcp:'.length));
}

/** The tool a grant entry names (`/mcp:files` → `/mcp`). */
export function grantTool(entry: string): string {
  return entry.startsWith('/mcp:') ? '/mcp' : entry;
}

/** Skill ids shown in agent cards for tool grants. */
export const TOOL_SKILL_IDS: Record<ToolName, string> = {
  '/agent': 'delegate-agent',
  '/parallel': 'parallel-delegation',
  '/write': 'write-file',
  '/mem': 'memory',
  '/fetch': 'fetch-url',
  '/a2a': 'remote-a2a',
  '/mcp': 'mcp',
  '/search': 'web-search',
};

/** What each tool does, as agent cards describe it (the model's own usage lines live with the turn loop). */
export const TOOL_DESCRIPTIONS: Record<ToolName, string> = {
  '/agent': "Delegates a task to another of the tenant's agents and uses its reply",
  '/parallel': 'Runs several tool commands at the same time',
  '/write': 'Produces files for the caller, returned as artifacts',
  '/mem': "Reads and writes the tenant's shared memory (add, get, list, search, delete)",
  '/fetch': 'Reads public web pages as text (private addresses are refused)',
  '/a2a': 'Calls remote A2A agents the operator registered',
  '/mcp': 'Lists and calls the tools of MCP servers the operator registered',
  '/search': 'Searches the web through the configured search provider (title, URL, snippet)',
};
