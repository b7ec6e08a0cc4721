import { Injectable } from '@nestjs/common';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { capBytes } from '../common/text.js';
import { jsonSyntaxProblem, parseJsonText } from '../common/json-guard.js';
import { McpFailure, McpPool } from './mcp-pool.service.js';
import { serverSecrets, type McpServerConfig } from './mcp-registry.service.js';
import { strippedWithin, stripKnownSecrets, stripSecrets } from '../outbound-auth/credentials.js';
import type { McpSdk } from './mcp-sdk.js';
import { TenantMcpServers } from './tenant-mcp-servers.service.js';

const RESULT_CAP = 16 * 1024;
const MAX_ARGS = 64 * 1024;
export const MCP_USAGE = 'ERR: usage: /mcp list | /mcp tools <server> | /mcp call <server> <tool> <json-args>';

/** Who is asking: the tenant (its own connections) and the servers its agent may use (null: all). */
export interface McpCaller {
  tenantId: string;
  servers: string[] | null;
}

const oneLine = (s: string | undefined, max = 160): string => {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max)}…` : t;
};

/**
 * The `/mcp` tool: `list` (servers and their tools), `tools <server>`
 * (names, descriptions, input schemas), `call <server> <tool> <json-args>`
 * (arguments checked against the tool's input schema first). Text and text
 * resources come back as text; images, audio and binary resources are
 * described, never inlined. Every failure is one stable `ERR:` line.
 */
@Injectable()
export class McpTool {
  /** Made with the SDK, on the first call (see `loadMcpSdk`). */
  private validator?: AjvJsonSchemaValidator;

  constructor(
    private readonly servers: TenantMcpServers,
    private readonly pool: McpPool,
  ) {}

  /** The result body of one `/mcp` command. */
  async run(args: string, caller: McpCaller, signal: AbortSignal): Promise<string> {
    const m = /^(\S+)(?:\s+(\S+))?(?:\s+(\S+))?(?:\s+([\s\S]+))?$/.exec(args.trim());
    const [, sub, server, tool, json] = m ?? [];
    try {
      if (sub === 'list' && !server) return await this.list(caller, signal);
      if (sub === 'tools' && server && !tool)
        return await this.toolsText(await this.pick(server, caller), caller, signal);
      if (sub === 'call' && server && tool)
        return await this.call(await this.pick(server, caller), tool, json, caller, signal);
      return MCP_USAGE;
    } catch (err) {
      signal.throwIfAborted();
      if (err instanceof McpFailure) return err.line;
      throw err;
    }
  }

  /** Servers this caller may use (of those its tenant sees), in name order. */
  async available(caller: McpCaller): Promise<McpServerConfig[]> {
    return (await this.servers.forTenant(caller.tenantId)).filter(
      (s) => !caller.servers || caller.servers.includes(s.name),
    );
  }

  /** The master agent's roster section, or '' with no servers. Starts nothing: tool names only of open connections. */
  async roster(caller: McpCaller): Promise<string> {
    const servers = await this.available(caller);
    if (servers.length === 0) return '';
    const lines = servers.map((s) => {
      const tools = this.pool.knownTools(caller.tenantId, s);
      const what = [s.transport === 'stdio' ? 'stdio' : 'http', tools ? `tools: ${oneLine(tools.join(', '), 400)}` : '']
        .filter(Boolean)
        .join('; ');
      return `  ${s.name}${s.description ? ` — ${oneLine(s.description, 200)}` : ''} (${what})`;
    });
    return `MCP SERVERS — see their tools with /mcp tools <server>, call one with /mcp call <server> <tool> <json-args>:\n${lines.join('\n')}`;
  }

  private async pick(name: string, caller: McpCaller): Promise<McpServerConfig> {
    const server = await this.servers.get(caller.tenantId, name);
    if (!server) throw new McpFailure(`ERR: no mcp server named '${name}'`);
    if (caller.servers && !caller.servers.includes(name)) {
      throw new McpFailure(
        `ERR: capability not granted: /mcp:${name} (this agent may use the mcp servers ${caller.servers.join(', ')})`,
      );
    }
    return server;
  }

  private async list(caller: McpCaller, signal: AbortSignal): Promise<string> {
    const all = await this.servers.forTenant(caller.tenantId);
    if (all.length === 0) return 'no mcp servers configured';
    const servers = all.filter((s) => !caller.servers || caller.servers.includes(s.name));
    if (servers.length === 0) return 'no mcp servers available to this agent';
    const blocks = await Promise.all(
      servers.map(async (s) => {
        const head = `${s.name} (${s.transport})${s.description ? ` — ${oneLine(s.description, 200)}` : ''}`;
        try {
          const tools = await this.pool.use(caller.tenantId, s, signal, (c) => this.pool.tools(c, signal));
          const lines = tools.map((t) => `  ${t.name}${t.description ? ` — ${oneLine(t.description)}` : ''}`);
          return [`${head}: ${tools.length} tool${tools.length === 1 ? '' : 's'}`, ...lines].join('\n');
        } catch (err) {
          signal.throwIfAborted();
          if (err instanceof McpFailure) return `${head}: unavailable (${err.line.replace(/^ERR: /, '')})`;
          throw err;
        }
      }),
    );
    return capBytes(blocks.join('\n'), RESULT_CAP);
  }

  private async toolsText(server: McpServerConfig, caller: McpCaller, signal: AbortSignal): Promise<string> {
    const tools = await this.pool.use(caller.tenantId, server, signal, (c) => this.pool.tools(c, signal));
    if (tools.length === 0) return `mcp server '${server.name}' offers no tools`;
    const blocks = tools.map((t) =>
      [
        `${t.name}${t.description ? ` — ${oneLine(t.description, 500)}` : ''}`,
        `  input: ${JSON.stringify(t.inputSchema)}`,
      ].join('\n'),
    );
    return capBytes(blocks.join('\n'), RESULT_CAP);
  }

  private async call(
    server: McpServerConfig,
    name: string,
    json: string | undefined,
    caller: McpCaller,
    signal: AbortSignal,
  ): Promise<string> {
    const args = parseArgs(json);
    return this.pool.use(caller.tenantId, server, signal, async (c) => {
      const tools = await this.pool.tools(c, signal);
      const tool = tools.find((t) => t.name === name);
      if (!tool) throw new McpFailure(`ERR: mcp server '${server.name}' has no tool '${name}'`);
      const problem = this.check(c.sdk, tool, args);
      if (problem) throw new McpFailure(`ERR: invalid arguments for ${server.name}/${name}: ${problem}`);
      const result = await this.pool.call(c, name, args, signal);
      const text = render(result);
      return result.isError
        ? `ERR: tool ${server.name}/${name} failed: ${strippedWithin(stripSecrets, text, serverSecrets(server), 4096)}`
        : // A result may quote what the server was sent: the entry's secrets come out (tokens of its own stay).
          strippedWithin(stripKnownSecrets, text, serverSecrets(server), RESULT_CAP);
    });
  }

  /** Why `args` do not fit the tool's input schema, or undefined. */
  private check(sdk: McpSdk, tool: Tool, args: Record<string, unknown>): string | undefined {
    this.validator ??= new sdk.AjvJsonSchemaValidator();
    let validate;
    try {
      validate = this.validator.getValidator(tool.inputSchema);
    } catch {
      return undefined; // a schema Ajv cannot compile: the server judges the arguments itself
    }
    const r = validate(args);
    return r.valid ? undefined : oneLine(r.errorMessage, 500);
  }
}

/** The `<json-args>` of `/mcp call`: absent means `{}`; otherwise one JSON object. */
function parseArgs(json: string | undefined): Record<string, unknown> {
  if (json === undefined || !json.trim()) return {};
  if (Buffer.byteLength(json) > MAX_ARGS) throw new McpFailure(`ERR: arguments are larger than ${MAX_ARGS / 1024} KiB`);
  let v: unknown;
  try {
    v = parseJsonText(json);
  } catch (err) {
    throw new McpFailure(`ERR: arguments must be a JSON object (${jsonSyntaxProblem(err)})`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new McpFailure('ERR: arguments must be a JSON object');
  return v as Record<string, unknown>;
}

const bytesOf = (base64: string): number => Math.floor((base64.replace(/=+$/, '').length * 3) / 4);

/** A tool result as text: text as is, text resources with their URI, everything binary described. */
export function render(result: CallToolResult): string {
  const out: string[] = [];
  for (const c of result.content ?? []) {
    switch (c.type) {
      case 'text':
        out.push(c.text);
        break;
      case 'image':
      case 'audio':
        out.push(`[${c.type}: ${c.mimeType}, ${bytesOf(c.data)} bytes — not shown]`);
        break;
      case 'resource': {
        const r = c.resource;
        if ('text' in r && typeof r.text === 'string') {
          out.push(`[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}]\n${r.text}`);
        } else {
          const blob = 'blob' in r && typeof r.blob === 'string' ? r.blob : '';
          out.push(`[resource ${r.uri}: ${r.mimeType ?? 'binary'}, ${bytesOf(blob)} bytes — not shown]`);
        }
        break;
      }
      case 'resource_link':
        out.push(
          `[resource link ${c.uri}${c.name ? ` (${c.name})` : ''}${c.description ? `: ${oneLine(c.description)}` : ''}]`,
        );
        break;
      default:
        out.push('[content of an unknown type — not shown]');
    }
  }
  if (out.length === 0 && result.structuredContent) out.push(JSON.stringify(result.structuredContent));
  return out.length ? out.join('\n') : '(no content)';
}
