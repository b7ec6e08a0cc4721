/**
 * A tiny stdio MCP server (the official SDK's low-level `Server`) for the
 * failure cases the reference servers cannot show: a tool that crashes the
 * process, one that hangs (recording the cancellation it receives), one
 * that errors, one that writes to stderr. `MCP_MARK_FILE` collects what
 * happened, one line per event.
 */
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const mark = (line: string): void => {
  if (process.env.MCP_MARK_FILE) appendFileSync(process.env.MCP_MARK_FILE, `${line}\n`);
};

const server = new Server({ name: 'arbiter-test', version: '1.0.0' }, { capabilities: { tools: {} } });
const empty = { type: 'object', properties: {} } as const;

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'crash', description: 'Exits the process with code 3', inputSchema: empty },
    { name: 'hang', description: 'Never answers (until cancelled)', inputSchema: empty },
    { name: 'fail', description: 'Answers with isError', inputSchema: empty },
    { name: 'noisy', description: 'Writes a secret to stderr, then answers', inputSchema: empty },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  switch (req.params.name) {
    case 'crash':
      process.stderr.write('fatal: stderr-secret-crash\n');
      process.exit(3);
      break;
    case 'hang':
      mark('started');
      await new Promise<void>((resolve) => {
        extra.signal.addEventListener('abort', () => {
          mark(`cancelled ${String(extra.signal.reason)}`);
          resolve();
        });
      });
      return { content: [{ type: 'text', text: 'too late' }] };
    case 'fail':
      return { content: [{ type: 'text', text: 'boom: the widget is broken' }], isError: true };
    case 'noisy':
      process.stderr.write('debug: stderr-secret-noisy\n');
      return { content: [{ type: 'text', text: 'quiet result' }] };
  }
  throw new Error(`no tool ${req.params.name}`);
});

await server.connect(new StdioServerTransport());
mark(`up ${process.pid}`);
