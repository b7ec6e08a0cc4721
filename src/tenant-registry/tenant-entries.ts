import type { ChangeBy } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { takeSecrets, withSecrets } from './tenant-registry-secrets.js';
import type { RegistryKind, TenantEntry, TenantRegistryStore } from './tenant-registry.store.js';

/** An entry as the API shows it: its fields (each secret as `"set"`) beside its name. */
export type EntryView = Record<string, unknown> & { name: string; created_at: string; updated_at: string };

/** What one registry (remote agents, MCP servers) says about its entries. */
export interface EntryRules {
  kind: RegistryKind;
  /** `remote agent`, `mcp server`: how errors name an entry. */
  what: string;
  /**
   * Validates a whole entry, secrets in place, as the registry file's entries are (and what a tenant may not name
   * refused); throws a 400 naming the field. Returns the paths of its secrets (`auth/token`, `headers/<name>`).
   */
  check(name: string, entry: Record<string, unknown>): string[];
}

const view = (e: TenantEntry): EntryView => ({
  name: e.name,
  ...e.config,
  created_at: e.createdAt.toISOString(),
  updated_at: e.updatedAt.toISOString(),
});

/** `auth` without a `type` is a bearer token (as in the files): stored with its type, so reads say which it is. */
function normalised(entry: Record<string, unknown>): Record<string, unknown> {
  const auth = entry.auth;
  if (auth && typeof auth === 'object' && !Array.isArray(auth) && Object.keys(auth).length > 0 && !('type' in auth)) {
    return { ...entry, auth: { type: 'bearer', ...auth } };
  }
  return entry;
}

/** The origin of a URL field's value (the value itself when it is no URL: then it is refused anyway). */
function originOf(value: unknown): string {
  try {
    return new URL(String(value)).origin;
  } catch {
    return String(value);
  }
}

/**
 * The API over a tenant's own entries of one registry: create, list, read, patch (fields given replace the stored
 * ones, `null` removes one; `auth` is replaced whole, its secrets given again), delete. Reads never carry a
 * secret: each shows as `"set"`. A patch that points an entry's `url` at another origin must give its secret
 * fields again (or `null`): a stored secret is never sent where its owner did not send it.
 */
export class TenantEntries {
  constructor(
    private readonly store: TenantRegistryStore,
    private readonly rules: EntryRules,
  ) {}

  async create(tenantId: string, name: string, body: Record<string, unknown>, by: ChangeBy): Promise<EntryView> {
    const entry = normalised(body);
    const paths = this.rules.check(name, entry);
    await this.store.create(tenantId, this.rules.kind, name, takeSecrets(entry, paths), by);
    return this.get(tenantId, name);
  }

  async list(tenantId: string): Promise<{ items: EntryView[] }> {
    return { items: (await this.store.list(tenantId, this.rules.kind)).map(view) };
  }

  async get(tenantId: string, name: string): Promise<EntryView> {
    const entry = await this.store.get(tenantId, this.rules.kind, name);
    if (!entry) throw DomainError.notFound(`${this.rules.what} '${name}'`);
    return view(entry);
  }

  async update(tenantId: string, name: string, patch: Record<string, unknown>, by: ChangeBy): Promise<EntryView> {
    const fields = Object.keys(patch).sort();
    await this.store.update(
      tenantId,
      this.rules.kind,
      name,
      (current) => {
        const next = withSecrets(current.config, current.secrets);
        for (const [k, v] of Object.entries(patch)) {
          if (v === null) delete next[k];
          else if (v !== undefined) next[k] = v;
        }
        this.keepSecretsHome(current, next, patch);
        const entry = normalised(next);
        return takeSecrets(entry, this.rules.check(name, entry));
      },
      fields,
      by,
    );
    return this.get(tenantId, name);
  }

  /**
   * Refuses a patch that points the entry's `url` at another origin while it keeps a stored secret field (`auth`,
   * `headers`) the patch does not give again: the secrets go to the `url`'s origin only (a card elsewhere is
   * fetched without them; over gRPC they go to the `url`'s host only), and whoever may edit an entry may not see its
   * secrets: pointing it at their own server would hand them over.
   */
  private keepSecretsHome(
    current: { config: Record<string, unknown>; secrets: Record<string, string> },
    next: Record<string, unknown>,
    patch: Record<string, unknown>,
  ): void {
    if (originOf(next.url) === originOf(current.config.url)) return;
    const kept = [...new Set(Object.keys(current.secrets).map((path) => path.slice(0, path.indexOf('/'))))].filter(
      (field) => patch[field] === undefined,
    );
    if (kept.length === 0) return;
    throw DomainError.validation(
      kept.sort().map((field) => ({
        field,
        messages: [
          `${field}: the ${this.rules.what}'s url would point at another origin; give ${field} again in the same request, or null to remove it (stored secrets go only where they were sent before)`,
        ],
      })),
    );
  }

  remove(tenantId: string, name: string, by: ChangeBy): Promise<void> {
    return this.store.delete(tenantId, this.rules.kind, name, by);
  }
}
