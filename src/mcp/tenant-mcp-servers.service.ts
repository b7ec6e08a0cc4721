import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { checkUrl, parseHostList, type EgressPolicy } from '../common/net/egress.js';
import { visibleTo } from '../common/registry-file/registry-fields.js';
import { authSecretFields } from '../outbound-auth/auth-fields.js';
import { entryProblem, urlProblem } from '../tenant-registry/registry-problem.js';
import { TenantEntries } from '../tenant-registry/tenant-entries.js';
import { withSecrets } from '../tenant-registry/tenant-registry-secrets.js';
import { TenantRegistryStore, type TenantEntry } from '../tenant-registry/tenant-registry.store.js';
import { McpRegistry, readTenantMcpEntry, type HttpServer, type McpServerConfig } from './mcp-registry.service.js';

const AT = 'entry';
const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The MCP servers a tenant sees: the operator's entries in `mcp_servers.json` shared with it (no `tenants` list,
 * or one naming it), and its own (`/v1/mcp-servers`: streamable HTTP only), which shadow an operator's entry of
 * the same name for that tenant only. Its own are reached through the same egress guard
 * (`ARBITER_MCP_ALLOW_PRIVATE`, `ARBITER_MCP_ALLOWLIST`); their header values and credentials are sealed.
 */
@Injectable()
export class TenantMcpServers {
  private readonly logger = new Logger('McpRegistry');
  private readonly policy: EgressPolicy;
  /** The API over the tenant's own entries. */
  readonly own: TenantEntries;

  constructor(
    config: AppConfig,
    readonly files: McpRegistry,
    private readonly store: TenantRegistryStore,
  ) {
    this.policy = { allowPrivate: config.mcpAllowPrivate, allowHosts: parseHostList(config.mcpAllowlist) };
    this.own = new TenantEntries(store, { kind: 'mcp', what: 'mcp server', check: (n, e) => this.check(n, e) });
  }

  /** Every server the tenant sees, by name. */
  async forTenant(tenantId: string): Promise<McpServerConfig[]> {
    const servers = new Map<string, McpServerConfig>(
      this.files.list().flatMap((s) => (visibleTo(s, tenantId) ? [[s.name, s] as const] : [])),
    );
    for (const e of await this.store.list(tenantId, 'mcp')) {
      const server = this.parsed(tenantId, e);
      if (server) servers.set(server.name, server);
    }
    return [...servers.values()].sort(byName);
  }

  /** Whether the tenant sees any server: without reading each of its own (an agent card only asks that). */
  async seesAny(tenantId: string): Promise<boolean> {
    if (this.files.list().some((s) => visibleTo(s, tenantId))) return true;
    return (await this.store.list(tenantId, 'mcp')).length > 0;
  }

  /** The server of this name the tenant sees (its own first). */
  async get(tenantId: string, name: string): Promise<McpServerConfig | undefined> {
    const own = await this.store.get(tenantId, 'mcp', name);
    if (own) return this.parsed(tenantId, own);
    const shared = this.files.get(name);
    return shared && visibleTo(shared, tenantId) ? shared : undefined;
  }

  private parsed(tenantId: string, e: TenantEntry): HttpServer | undefined {
    try {
      return readTenantMcpEntry(e.name, withSecrets(e.config, e.secrets), AT, tenantId);
    } catch (err) {
      this.logger.warn({ tenantId, name: e.name, err: (err as Error).message }, 'stored MCP server left out');
      return undefined;
    }
  }

  private check(name: string, entry: Record<string, unknown>): string[] {
    let server: HttpServer;
    try {
      server = readTenantMcpEntry(name, entry, AT, '');
    } catch (err) {
      throw entryProblem(err, AT);
    }
    try {
      checkUrl(server.url, this.policy);
    } catch (err) {
      throw urlProblem(err, 'url', 'ARBITER_MCP_ALLOW_PRIVATE or ARBITER_MCP_ALLOWLIST');
    }
    const headers = entry.headers && typeof entry.headers === 'object' ? Object.keys(entry.headers) : [];
    return [...authSecretFields(entry.auth).map((f) => `auth/${f}`), ...headers.map((h) => `headers/${h}`)];
  }
}
