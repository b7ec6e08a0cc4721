import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../../common/auth.decorators.js';
import { RemoteRegistry } from '../../a2a-outbound/remote-registry.service.js';
import { McpRegistry } from '../../mcp/mcp-registry.service.js';

/** A URL without its query and fragment, which can carry keys: what an operator needs to recognise the endpoint. */
function bareUrl(href: string): string {
  try {
    const u = new URL(href);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * `/v1/admin/registries/*`: the remote A2A agents and MCP servers as this replica loaded them from their files,
 * with the last load error (the previous good registry stays in force). Read-only; never a token, header value,
 * environment value, command argument or URL query (any of them can hold a secret) — only which are missing.
 */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin/registries')
export class AdminRegistriesController {
  constructor(
    private readonly remotes: RemoteRegistry,
    private readonly mcp: McpRegistry,
  ) {}

  @Get('a2a-agents')
  a2aAgents() {
    const items = this.remotes.list().map((a) => ({
      name: a.name,
      url: bareUrl(a.url),
      card_url: a.cardUrl ? bareUrl(a.cardUrl) : null,
      auth: a.auth.type,
      missing_env: a.missingTokenEnv ? [a.missingTokenEnv] : [],
      ...(a.tenants ? { tenants: a.tenants } : {}),
    }));
    return { file: this.remotes.path, error: this.remotes.lastError, items };
  }

  @Get('mcp-servers')
  mcpServers() {
    const items = this.mcp.list().map((s) => ({
      name: s.name,
      transport: s.transport,
      description: s.description,
      ...(s.transport === 'http' ? { url: bareUrl(s.url) } : { command: s.command, args_count: s.args.length }),
      missing_env: s.missingEnv,
      ...(s.tenants ? { tenants: s.tenants } : {}),
    }));
    return { file: this.mcp.path, error: this.mcp.lastError, items };
  }
}
