import { aadOf } from '../secrets/secret-box.js';
import type { SealedColumn } from '../secrets/sealed-columns.js';

/** What a stored entry's secrets are shown as: that one is set, never its value. */
export const SET = 'set';

/** An entry's secrets by path: `auth/token`, `headers/<header name>` (`/` is in no field or header name). */
export type Secrets = Record<string, string>;

/** A tenant entry's secrets are bound to its tenant, kind, name and column: they open for no other entry. */
export function registrySecretAad(tenantId: string, kind: string, name: string): string {
  return aadOf('tenant_registry_entries', tenantId, kind, name, 'secrets');
}

/** The sealed column, for `npm run secrets:rotate`. */
export const TENANT_REGISTRY_SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    table: 'tenant_registry_entries',
    id: 'id',
    reads: ['tenant_id', 'kind', 'name'],
    column: 'secrets',
    aad: (row) => registrySecretAad(row.tenant_id ?? '', row.kind ?? '', row.name ?? ''),
  },
];

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Moves the values at `paths` (`auth/token` …, two levels) out of a copy of `entry`, which keeps `"set"` in their
 * place: what is stored in the clear (and shown), and what is sealed.
 */
export function takeSecrets(
  entry: Record<string, unknown>,
  paths: readonly string[],
): { config: Record<string, unknown>; secrets: Secrets } {
  const config = structuredClone(entry);
  const secrets: Secrets = {};
  for (const path of paths) {
    const [outer, inner] = splitPath(path);
    const holder = config[outer];
    if (!isObject(holder) || typeof holder[inner] !== 'string') continue;
    secrets[path] = holder[inner];
    holder[inner] = SET;
  }
  return { config, secrets };
}

/** The entry with its secrets back in place (what is validated and used). */
export function withSecrets(config: Record<string, unknown>, secrets: Secrets): Record<string, unknown> {
  const entry = structuredClone(config);
  for (const [path, value] of Object.entries(secrets)) {
    const [outer, inner] = splitPath(path);
    const holder = entry[outer];
    if (isObject(holder)) holder[inner] = value;
  }
  return entry;
}

function splitPath(path: string): [string, string] {
  const i = path.indexOf('/');
  return [path.slice(0, i), path.slice(i + 1)];
}
