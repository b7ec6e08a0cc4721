import type { ResolvedAgent } from '../registry/services/agents.js';
import { toolGrants } from '../registry/constitution.js';

const TOOL_HELP: Record<string, string> = {
  '/agent': '/agent <id> <task> — delegate a task to another agent; its reply comes back to you',
  '/parallel': '/parallel … /endparallel — run the command lines between them at the same time (at most 16)',
  '/write':
    '/write <path> … /endwrite — give the user a file holding the lines between them (/write --base64 <path>: the lines are base64 of a binary file)',
  '/mem':
    '/mem add <text> | /mem get <id> | /mem list | /mem search <query> | /mem delete <id> — the team memory, shared by its agents',
  '/fetch': '/fetch <url> — read a public web page as text',
  '/a2a':
    '/a2a list | /a2a card <name> | /a2a call <name> <message> — remote A2A agents (another trust boundary: they see only your message)',
  '/mcp':
    '/mcp list | /mcp tools <server> | /mcp call <server> <tool> <json-args> — tools of MCP servers (arguments: one JSON object)',
  '/search': '/search <query> — search the web: titles, URLs and snippets (read a page with /fetch <url>)',
};

/** The TOOLS block of a system prompt: the commands this agent may use. */
export function toolHelp(agent: ResolvedAgent, mayDelegate: boolean): string {
  const grants = toolGrants(agent.constitution);
  const lines = Object.entries(TOOL_HELP)
    .filter(([verb]) => grants.length === 0 || grants.includes(verb))
    .filter(([verb]) => mayDelegate || verb !== '/agent')
    .map(([, help]) => `  ${help}`);
  if (lines.length === 0) return '';
  return [
    'TOOLS — to use one, write the command at the start of a line of its own (block commands end with their terminator line).',
    'Every command in your reply runs; the results come back to you in the next message, framed [/command] … [END COMMAND].',
    ...lines,
  ].join('\n');
}
