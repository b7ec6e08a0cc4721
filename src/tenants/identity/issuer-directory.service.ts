import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { DataSource, EntityManager } from 'typeorm';
import type { ChangeBy } from '../../common/auth.decorators.js';
import { DomainError, type FieldError } from '../../common/errors.js';
import { hostListed, parseHostList } from '../../common/net/egress.js';
import { safeError } from '../../common/safe-error.js';
import { flattenValidationErrors, UUID_PATTERN } from '../../common/validation.js';
import { AppConfig } from '../../config/app-config.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TrustedIssuerEntity } from '../entities/trusted-issuer.entity.js';
import { AuditRepository } from '../repositories/audit.repository.js';
import { OpenStreams } from '../services/open-streams.service.js';
import { IssuerDto, issuerProblems, type IssuerPatchDto } from './issuer.dto.js';
import { ASYMMETRIC_ALGORITHMS, type AsymmetricAlgorithm, type TrustedIssuer } from './trusted-issuer.js';

/** The replica channel of issuer changes: `<issuer id>`; every replica reloads the directory. */
export const ISSUERS_CHANNEL = 'arbiter_issuers';

/** What the admin API answers for an issuer. */
export interface IssuerView {
  id: string;
  issuer: string;
  audiences: string[];
  algorithms: string[];
  clock_skew_seconds: number;
  jwks_uri: string | null;
  tenant_claim: string | null;
  tenant_id: string | null;
  role_claim: string | null;
  scope_map: Record<string, string[]>;
  created_at: string;
  updated_at: string;
}

export function issuerView(i: TrustedIssuer): IssuerView {
  return {
    id: i.id,
    issuer: i.issuer,
    audiences: i.audiences,
    algorithms: i.algorithms,
    clock_skew_seconds: i.clockSkewSeconds,
    jwks_uri: i.jwksUri,
    tenant_claim: i.tenantClaim,
    tenant_id: i.tenantId,
    role_claim: i.roleClaim,
    scope_map: i.scopeMap,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
  };
}

const trusted = (e: TrustedIssuerEntity): TrustedIssuer => ({
  id: e.id,
  issuer: e.issuer,
  audiences: e.audiences,
  algorithms: e.algorithms.filter((a): a is AsymmetricAlgorithm =>
    (ASYMMETRIC_ALGORITHMS as readonly string[]).includes(a),
  ),
  clockSkewSeconds: e.clockSkewSeconds,
  jwksUri: e.jwksUri,
  tenantClaim: e.tenantClaim,
  tenantId: e.tenantId,
  roleClaim: e.roleClaim,
  scopeMap: e.scopeMap,
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString(),
});

/**
 * The trusted issuers, held in memory by `iss` on every replica: read at
 * start, and again on every change notice (a change answers once every
 * replica has applied it). Operators declare them through the admin API;
 * `ARBITER_TRUSTED_ISSUERS_FILE` may seed them at start.
 */
@Injectable()
export class IssuerDirectory implements OnModuleInit {
  private readonly logger = new Logger('IssuerDirectory');
  private byIssuer = new Map<string, TrustedIssuer>();
  /** Reads of the issuers begun, and the latest begun whose answer is in `byIssuer`. */
  private reads = 0;
  private applied = 0;
  private readonly changeHandlers: ((issuerId: string) => void)[] = [];

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly channel: ReplicaChannel,
    private readonly audit: AuditRepository,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    // Confirmed to the replica that made the change once the issuers are re-read and the handlers ran.
    this.channel.listenApplied(ISSUERS_CHANNEL, (id) => this.changed(id));
    this.channel.onReconnect(() => void this.reload());
    await this.seed();
    await this.reload();
  }

  /** The trusted issuer whose `iss` this is. */
  find(iss: string): TrustedIssuer | undefined {
    return this.byIssuer.get(iss);
  }

  all(): TrustedIssuer[] {
    return [...this.byIssuer.values()];
  }

  /** Runs `handler` with an issuer's id whenever it changes or goes (here or on another replica). */
  onChange(handler: (issuerId: string) => void): void {
    this.changeHandlers.push(handler);
  }

  async list(): Promise<IssuerView[]> {
    const rows = await this.ds.manager.find(TrustedIssuerEntity, { order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map((r) => issuerView(trusted(r)));
  }

  async get(id: string): Promise<IssuerView> {
    return issuerView(trusted(await this.mustFind(this.ds.manager, id)));
  }

  async create(dto: IssuerDto, by: ChangeBy): Promise<IssuerView> {
    this.check(dto, true);
    const id = randomUUID();
    return this.changing(id, by, 'issuer.create', async (em) => {
      await this.mustHaveTenant(em, dto.tenant_id);
      await unique(() => em.insert(TrustedIssuerEntity, { id, ...columns(dto) }));
      return em.findOneByOrFail(TrustedIssuerEntity, { id });
    });
  }

  async update(id: string, dto: IssuerPatchDto, by: ChangeBy): Promise<IssuerView> {
    this.check(dto, false);
    return this.changing(id, by, 'issuer.update', async (em) => {
      const row = await this.mustFind(em, id);
      const next = { ...row, ...columns(dto) };
      if (next.tenantClaim && next.tenantId) {
        throw DomainError.validation([{ field: 'tenant_id', messages: ['give tenant_claim or tenant_id, not both'] }]);
      }
      if (next.tenantId && next.roleClaim) {
        throw DomainError.validation([
          {
            field: 'role_claim',
            messages: ['an issuer bound to one tenant (tenant_id) cannot grant operator roles; leave role_claim out'],
          },
        ]);
      }
      if (!next.tenantClaim && !next.tenantId && !next.roleClaim) {
        // What creating refuses: an issuer none of whose tokens could act for anyone.
        throw DomainError.validation([
          {
            field: 'tenant_claim',
            messages: ['give tenant_claim or tenant_id (tenant callers), role_claim (operators), or both'],
          },
        ]);
      }
      await this.mustHaveTenant(em, dto.tenant_id);
      await unique(() => em.update(TrustedIssuerEntity, { id }, columns(dto)));
      return em.findOneByOrFail(TrustedIssuerEntity, { id });
    });
  }

  /** Removes an issuer: its tokens are refused and the streams they opened end, on every replica, when this answers. */
  async remove(id: string, by: ChangeBy): Promise<void> {
    await this.changing(id, by, 'issuer.delete', async (em) => {
      const row = await this.mustFind(em, id);
      await em.delete(TrustedIssuerEntity, { id });
      return row;
    });
  }

  /** A change in one transaction with its audit row and its notices; answered once every replica applied it. */
  private async changing(
    id: string,
    by: ChangeBy,
    action: string,
    work: (em: EntityManager) => Promise<TrustedIssuerEntity>,
  ): Promise<IssuerView> {
    const { row, heard } = await this.ds.transaction(async (em) => {
      const row = await work(em);
      await this.audit.record(em, { action, tenantId: row.tenantId, detail: { id, issuer: row.issuer }, by });
      const notices: Promise<unknown>[] = [this.channel.appliedEverywhere(ISSUERS_CHANNEL, id).done];
      await em.query(`SELECT pg_notify($1, $2)`, [ISSUERS_CHANNEL, id]);
      if (action !== 'issuer.create') {
        notices.push((await this.streams.announce(em, [{ kind: 'issuer_removed', issuerId: id }])).heard);
      }
      return { row, heard: Promise.all(notices) };
    });
    await this.changed(id);
    if (action === 'issuer.delete') this.streams.apply({ kind: 'issuer_removed', issuerId: id });
    await heard;
    return issuerView(trusted(row));
  }

  private async changed(id: string): Promise<void> {
    await this.reload();
    for (const handler of this.changeHandlers) handler(id);
  }

  /** Re-reads the issuers; of reads that overlap, an earlier one that answers last does not undo a later one. */
  private async reload(): Promise<void> {
    const read = ++this.reads;
    try {
      const rows = await this.ds.manager.find(TrustedIssuerEntity);
      if (read < this.applied) return;
      this.applied = read;
      this.byIssuer = new Map(rows.map((r) => [r.issuer, trusted(r)]));
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not read the trusted issuers; keeping the ones known');
    }
  }

  /** Field problems of a body (400), and a plain-http issuer whose host is not allow-listed. */
  private check(dto: IssuerPatchDto, creating: boolean): void {
    const problems: FieldError[] = issuerProblems(dto, creating);
    const policy = { allowPrivate: false, allowHosts: parseHostList(this.config.identityAllowlist) };
    for (const [field, raw] of [
      ['issuer', dto.issuer],
      ['jwks_uri', dto.jwks_uri],
    ] as const) {
      if (!raw) continue;
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        // The field's pattern lets through what is still no URL: a port past 65535, a broken IP literal.
        problems.push({ field, messages: [`${field} must be a valid http(s) URL (host and port included)`] });
        continue;
      }
      if (url.protocol === 'http:' && !hostListed(url, policy)) {
        problems.push({
          field,
          messages: [`${field} must be https (plain http only for hosts in ARBITER_IDENTITY_ALLOWLIST)`],
        });
      }
    }
    if (problems.length) throw DomainError.validation(problems);
  }

  private async mustHaveTenant(em: EntityManager, tenantId: string | null | undefined): Promise<void> {
    if (!tenantId) return;
    const [row] = await em.query<unknown[]>(`SELECT 1 FROM tenants WHERE id = $1`, [tenantId]);
    if (!row) throw DomainError.validation([{ field: 'tenant_id', messages: ['no tenant has this id'] }]);
  }

  private async mustFind(em: EntityManager, id: string): Promise<TrustedIssuerEntity> {
    const row = UUID_PATTERN.test(id) ? await em.findOneBy(TrustedIssuerEntity, { id }) : null;
    if (!row) throw DomainError.notFound('trusted issuer');
    return row;
  }

  /** Issuers from `ARBITER_TRUSTED_ISSUERS_FILE` not declared yet (matched by `issuer`); a bad file stops the start. */
  private async seed(): Promise<void> {
    const file = this.config.trustedIssuersFile;
    if (!file) return;
    let entries: unknown;
    try {
      entries = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(
        `ARBITER_TRUSTED_ISSUERS_FILE ${file} cannot be read as JSON (${err instanceof Error ? err.message : 'unreadable'})`,
      );
    }
    if (!Array.isArray(entries)) throw new Error(`ARBITER_TRUSTED_ISSUERS_FILE ${file} must hold a JSON array`);
    for (const [i, entry] of entries.entries()) {
      const dto = plainToInstance(IssuerDto, entry as object);
      const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true });
      const problems = [...flattenValidationErrors(errors), ...issuerProblems(dto, true)];
      const first = problems[0];
      if (first) {
        throw new Error(`ARBITER_TRUSTED_ISSUERS_FILE ${file}: entry ${i}: ${first.field}: ${first.messages[0]}`);
      }
      this.check(dto, true);
      const exists = await this.ds.manager.existsBy(TrustedIssuerEntity, { issuer: dto.issuer });
      if (exists) continue;
      await this.ds.transaction(async (em) => {
        const id = randomUUID();
        await em.insert(TrustedIssuerEntity, { id, ...columns(dto) });
        await this.audit.record(em, {
          action: 'issuer.create',
          tenantId: dto.tenant_id ?? null,
          detail: { id, issuer: dto.issuer, from: 'ARBITER_TRUSTED_ISSUERS_FILE' },
          by: { actor: 'root' },
        });
      });
      this.logger.log({ issuer: dto.issuer }, 'trusted issuer added from ARBITER_TRUSTED_ISSUERS_FILE');
    }
  }
}

/** The columns a body sets (a key left out is unchanged). */
function columns(dto: IssuerPatchDto): Partial<TrustedIssuerEntity> {
  const c: Partial<TrustedIssuerEntity> = {};
  if (dto.issuer !== undefined) c.issuer = dto.issuer;
  if (dto.audiences !== undefined) c.audiences = dto.audiences;
  if (dto.algorithms !== undefined) c.algorithms = dto.algorithms;
  else if (dto.issuer !== undefined && dto.audiences !== undefined) c.algorithms = ['RS256', 'PS256', 'ES256', 'EdDSA'];
  if (dto.clock_skew_seconds !== undefined) c.clockSkewSeconds = dto.clock_skew_seconds;
  if (dto.jwks_uri !== undefined) c.jwksUri = dto.jwks_uri;
  if (dto.tenant_claim !== undefined) c.tenantClaim = dto.tenant_claim;
  if (dto.tenant_id !== undefined) c.tenantId = dto.tenant_id;
  if (dto.role_claim !== undefined) c.roleClaim = dto.role_claim;
  if (dto.scope_map !== undefined) c.scopeMap = dto.scope_map;
  return c;
}

async function unique<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if ((err as { driverError?: { code?: string } }).driverError?.code === '23505') {
      throw new DomainError('conflict', 'this issuer is already trusted');
    }
    throw err;
  }
}
