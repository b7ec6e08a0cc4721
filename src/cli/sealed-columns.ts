import { PUSH_SEALED_COLUMNS } from '../push/push-secrets.js';
import { TENANT_REGISTRY_SEALED_COLUMNS } from '../tenant-registry/tenant-registry-secrets.js';
import type { SealedColumn } from '../secrets/sealed-columns.js';

/** Every column of stored secrets, which `npm run secrets:rotate` seals again: a module that keeps secrets adds its own. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [...PUSH_SEALED_COLUMNS, ...TENANT_REGISTRY_SEALED_COLUMNS];
