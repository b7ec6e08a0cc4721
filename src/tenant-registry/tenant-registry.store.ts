import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { QueryFailedError, type DataSource, type EntityManager } from 'typeorm';
import type { ChangeBy } from '../common/auth.decorators.js';
import { DomainError } from '../common/errors.js';
import { ReplicaCache } from '../database/replica-cache.js';
import { ReplicaChannel } from '../database/replica-channel.service.js';
import { SecretBox, SecretsError } from '../secrets/secret-box.js';
import { AuditLog } from '../tenants/services/audit-log.service.js';
import { TenantRegistryEntryEntity } from './tenant-registry-entry.entity.js';
import { registrySecretAad, type Secrets } from './tenant-registry-secrets.js';

export type RegistryKind = 'a2a' | 'mcp';

/** A stored entry, its secrets opened. */
export interface TenantEntry {
  name: string;
  /** The entry's fields, each secret shown as `"set"`. */
  config: Record<string, unknown>;
  secrets: Secrets;
  createdAt: Date;
  updatedAt: Date;
}

/** What is written: the entry's fields in the clear, and the secrets to seal. */
export interface EntryWrite {
  config: Record<string, unknown>;
  secrets: Secrets;
}

/** The replica channel of tenant registry changes: `<kind>|<tenant id>`. */
const CHANNEL = 'arbiter_tenant_registry';
/** How long a tenant's entries are served from memory at most (changes drop them at once, on every replica). */
const TTL_MS = 60_000;
/** Entries of one kind a tenant may keep: the roster and `/a2a list` read them all. */
export const MAX_ENTRIES = 100;

const WHAT: Record<RegistryKind, string> = { a2a: 'remote agent', mcp: 'mcp server' };
const ACTION: Record<RegistryKind, string> = { a2a: 'remote_agent', mcp: 'mcp_server' };

/**
 * Tenants' own remote A2A agents and MCP servers in PostgreSQL: their secrets sealed (`SecretBox`; with no key
 * an entry that has one is refused), each change audited in its transaction and, before it is answered, applied
 * on every replica (their caches dropped through the replica channel).
 */
@Injectable()
export class TenantRegistryStore implements OnModuleInit {
  private readonly logger = new Logger('TenantRegistry');
  private readonly cache: ReplicaCache<TenantEntry[]>;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly channel: ReplicaChannel,
    private readonly audit: AuditLog,
    private readonly box: SecretBox,
  ) {
    this.cache = new ReplicaCache(channel, TTL_MS);
  }

  onModuleInit(): void {
    this.channel.listenApplied(CHANNEL, (key) => this.cache.delete(key));
  }

  /** The tenant's entries of `kind`, by name (an entry whose secrets no longer open is left out, and logged). */
  async list(tenantId: string, kind: RegistryKind): Promise<TenantEntry[]> {
    const key = `${kind}|${tenantId}`;
    const known = this.cache.get(key);
    if (known) return known;
    const generation = this.cache.begin();
    const rows = await this.ds.manager.find(TenantRegistryEntryEntity, {
      where: { tenantId, kind },
      order: { name: 'ASC' },
    });
    const entries = rows.flatMap((r) => this.opened(r));
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.cache.set(key, entries, generation);
    return entries;
  }

  async get(tenantId: string, kind: RegistryKind, name: string): Promise<TenantEntry | undefined> {
    return (await this.list(tenantId, kind)).find((e) => e.name === name);
  }

  async create(tenantId: string, kind: RegistryKind, name: string, write: EntryWrite, by: ChangeBy): Promise<void> {
    const secrets = this.sealed(tenantId, kind, name, write.secrets);
    try {
      await this.ds.transaction(async (em) => {
        const [{ n }] = await em.query<[{ n: number }]>(
          `SELECT count(*)::int AS n FROM "tenant_registry_entries" WHERE "tenant_id" = $1 AND "kind" = $2`,
          [tenantId, kind],
        );
        if (n >= MAX_ENTRIES) {
          throw new DomainError('conflict', `a tenant keeps at most ${MAX_ENTRIES} ${WHAT[kind]}s`);
        }
        await em.insert(TenantRegistryEntryEntity, {
          id: randomUUID(),
          tenantId,
          kind,
          name,
          config: write.config as object,
          secrets,
        });
        await this.record(em, tenantId, kind, name, 'create', by);
      });
    } catch (err) {
      if (err instanceof QueryFailedError && (err.driverError as { code?: string }).code === '23505') {
        throw new DomainError('conflict', `${WHAT[kind]} '${name}' already exists`);
      }
      throw err;
    }
    await this.changed(tenantId, kind);
  }

  /** Row-locked read-modify-write: `change` gets the current entry (secrets opened) and says what to store. */
  async update(
    tenantId: string,
    kind: RegistryKind,
    name: string,
    change: (current: TenantEntry) => EntryWrite,
    fields: string[],
    by: ChangeBy,
  ): Promise<void> {
    await this.ds.transaction(async (em) => {
      const row = await em
        .getRepository(TenantRegistryEntryEntity)
        .createQueryBuilder('e')
        .setLock('pessimistic_write')
        .where('e.tenant_id = :tenantId AND e.kind = :kind AND e.name = :name', { tenantId, kind, name })
        .getOne();
      if (!row) throw DomainError.notFound(`${WHAT[kind]} '${name}'`);
      const current = this.opened(row)[0];
      if (!current) {
        throw new DomainError(
          'conflict',
          `${WHAT[kind]} '${name}': its stored secrets do not open; delete it and create it again`,
        );
      }
      const next = change(current);
      await em.update(
        TenantRegistryEntryEntity,
        { id: row.id },
        {
          config: next.config as object,
          secrets: this.sealed(tenantId, kind, name, next.secrets),
          updatedAt: new Date(),
        },
      );
      await this.record(em, tenantId, kind, name, 'update', by, { fields });
    });
    await this.changed(tenantId, kind);
  }

  async delete(tenantId: string, kind: RegistryKind, name: string, by: ChangeBy): Promise<void> {
    await this.ds.transaction(async (em) => {
      const res = await em.delete(TenantRegistryEntryEntity, { tenantId, kind, name });
      if (!res.affected) throw DomainError.notFound(`${WHAT[kind]} '${name}'`);
      await this.record(em, tenantId, kind, name, 'delete', by);
    });
    await this.changed(tenantId, kind);
  }

  /** The audit row (never a secret: the entry's name and which fields changed). */
  private record(
    em: EntityManager,
    tenantId: string,
    kind: RegistryKind,
    name: string,
    op: 'create' | 'update' | 'delete',
    by: ChangeBy,
    detail: Record<string, unknown> = {},
  ): Promise<void> {
    return this.audit.record(em, {
      actor: 'tenant',
      action: `${ACTION[kind]}.${op}`,
      tenantId,
      detail: { name, ...detail },
      by,
    });
  }

  /** A change committed: dropped here and on every replica before it is answered. */
  private async changed(tenantId: string, kind: RegistryKind): Promise<void> {
    const key = `${kind}|${tenantId}`;
    this.cache.delete(key);
    if (!this.channel.enabled) return;
    const echo = this.channel.appliedEverywhere(CHANNEL, key);
    await this.ds.query(`SELECT pg_notify($1, $2)`, [CHANNEL, key]);
    await echo.done;
  }

  /** The column's value: null without secrets; sealed, never plain (no key: refused, naming the setting). */
  private sealed(tenantId: string, kind: RegistryKind, name: string, secrets: Secrets): string | null {
    const fields = Object.keys(secrets);
    if (fields.length === 0) return null;
    if (!this.box.configured()) {
      throw DomainError.validation(
        fields.map((f) => ({
          field: f.replace('/', '.'),
          messages: [
            'an inline secret is stored sealed, and this server has no sealing key: the operator sets ARBITER_SECRETS_KEY (or ARBITER_SECRETS_KEY_FILE)',
          ],
        })),
        'inline secrets need ARBITER_SECRETS_KEY',
      );
    }
    return this.box.seal(JSON.stringify(secrets), registrySecretAad(tenantId, kind, name));
  }

  private opened(row: TenantRegistryEntryEntity): TenantEntry[] {
    let secrets: Secrets = {};
    if (row.secrets !== null) {
      try {
        secrets = JSON.parse(
          this.box.fromStored(row.secrets, registrySecretAad(row.tenantId, row.kind, row.name)),
        ) as Secrets;
      } catch (err) {
        const why = err instanceof SecretsError ? err.message : 'not JSON';
        this.logger.warn({ tenantId: row.tenantId, kind: row.kind, name: row.name }, `entry left out: ${why}`);
        return [];
      }
    }
    return [{ name: row.name, config: row.config, secrets, createdAt: row.createdAt, updatedAt: row.updatedAt }];
  }
}
