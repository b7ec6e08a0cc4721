import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { checkUrl, type EgressPolicy } from '../common/net/egress.js';
import { visibleTo } from '../common/registry-file/registry-fields.js';
import { authSecretFields } from '../outbound-auth/auth-fields.js';
import { entryProblem, urlProblem } from '../tenant-registry/registry-problem.js';
import { TenantEntries } from '../tenant-registry/tenant-entries.js';
import { withSecrets } from '../tenant-registry/tenant-registry-secrets.js';
import { TenantRegistryStore, type TenantEntry } from '../tenant-registry/tenant-registry.store.js';
import { readRemoteEntry, RemoteRegistry, type RemoteAgent } from './remote-registry.service.js';

const AT = 'entry';
const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The remote A2A agents a tenant sees: the operator's entries in `a2a_agents.json` shared with it (no `tenants`
 * list, or one naming it), and its own (`/v1/remote-agents`), which shadow an operator's entry of the same name
 * for that tenant only. Its own entries are validated as the file's are, with no host variables or files, and
 * reached through the same egress guard (`ARBITER_A2A_ALLOW_PRIVATE`).
 */
@Injectable()
export class TenantRemotes {
  private readonly logger = new Logger('A2aRegistry');
  private readonly policy: EgressPolicy;
  /** The API over the tenant's own entries. */
  readonly own: TenantEntries;

  constructor(
    config: AppConfig,
    private readonly files: RemoteRegistry,
    private readonly store: TenantRegistryStore,
  ) {
    this.policy = { allowPrivate: config.a2aAllowPrivate, allowHosts: new Set() };
    this.own = new TenantEntries(store, { kind: 'a2a', what: 'remote agent', check: (n, e) => this.check(n, e) });
  }

  /** Every remote the tenant sees, by name. */
  async forTenant(tenantId: string): Promise<RemoteAgent[]> {
    const remotes = new Map(this.files.list().flatMap((a) => (visibleTo(a, tenantId) ? [[a.name, a] as const] : [])));
    for (const e of await this.store.list(tenantId, 'a2a')) {
      const agent = this.parsed(tenantId, e);
      if (agent) remotes.set(agent.name, agent);
    }
    return [...remotes.values()].sort(byName);
  }

  /** The remote of this name the tenant sees (its own first). */
  async get(tenantId: string, name: string): Promise<RemoteAgent | undefined> {
    const own = await this.store.get(tenantId, 'a2a', name);
    if (own) return this.parsed(tenantId, own);
    const shared = this.files.get(name);
    return shared && visibleTo(shared, tenantId) ? shared : undefined;
  }

  /**
   * The remote a remote-backed agent names: in `registry` when given (the tenant's own entries, or the operator's
   * shared ones it sees), else as `get` finds it.
   */
  async lookup(tenantId: string, name: string, registry?: 'tenant' | 'shared'): Promise<RemoteAgent | undefined> {
    if (!registry) return this.get(tenantId, name);
    if (registry === 'tenant') {
      const own = await this.store.get(tenantId, 'a2a', name);
      return own ? this.parsed(tenantId, own) : undefined;
    }
    const shared = this.files.get(name);
    return shared && visibleTo(shared, tenantId) ? shared : undefined;
  }

  private parsed(tenantId: string, e: TenantEntry): RemoteAgent | undefined {
    try {
      const { agent } = readRemoteEntry(e.name, withSecrets(e.config, e.secrets), AT, {});
      return { ...agent, owner: tenantId };
    } catch (err) {
      this.logger.warn({ tenantId, name: e.name, err: (err as Error).message }, 'stored remote agent left out');
      return undefined;
    }
  }

  private check(name: string, entry: Record<string, unknown>): string[] {
    let agent: RemoteAgent;
    try {
      agent = readRemoteEntry(name, entry, AT, {}).agent;
    } catch (err) {
      throw entryProblem(err, AT);
    }
    for (const [field, url] of [
      ['url', agent.url],
      ['card_url', agent.cardUrl],
    ] as const) {
      if (!url) continue;
      try {
        checkUrl(url, this.policy);
      } catch (err) {
        throw urlProblem(err, field, 'ARBITER_A2A_ALLOW_PRIVATE');
      }
    }
    return authSecretFields(entry.auth).map((f) => `auth/${f}`);
  }
}
