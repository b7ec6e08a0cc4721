import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { IsNull, type DataSource } from 'typeorm';
import type { ChangeBy, OperatorPrincipal, OperatorRole } from '../../common/auth.decorators.js';
import { UUID_PATTERN } from '../../common/validation.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { ReplicaCache } from '../../database/replica-cache.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { OperatorTokenEntity } from '../entities/operator-token.entity.js';
import { AuditRepository } from '../repositories/audit.repository.js';
import { AdminTokenService } from './admin-token.service.js';
import { ACCESS_CHANNEL, OpenStreams } from './open-streams.service.js';
import { generateAdminToken, sha256Hex, tokenPrefix } from './token-crypto.js';

export interface OperatorView {
  id: string;
  name: string;
  role: OperatorRole;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const view = (o: OperatorTokenEntity): OperatorView => ({
  id: o.id,
  name: o.name,
  role: o.role,
  prefix: o.prefix,
  created_at: o.createdAt.toISOString(),
  revoked_at: iso(o.revokedAt),
  last_used_at: iso(o.lastUsedAt),
});

const OPERATOR_TOKEN = /^adm_[0-9a-f]{64}$/;
const TOUCH_EVERY_MS = 60_000;

/**
 * Operators' `adm_…` tokens: the root one (break-glass, `AdminTokenService`)
 * and named ones an operator creates and revokes through the admin API,
 * each with a name (the actor its audit rows name) and a role. Only
 * hashes are stored; verified tokens are kept in memory until an access
 * change (a revocation, on any replica) drops them.
 */
@Injectable()
export class OperatorTokens implements OnModuleInit {
  private readonly logger = new Logger('OperatorTokens');
  private readonly verified: ReplicaCache<{ principal: OperatorPrincipal; touchedAt: number }>;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly root: AdminTokenService,
    private readonly audit: AuditRepository,
    private readonly streams: OpenStreams,
    private readonly channel: ReplicaChannel,
  ) {
    this.verified = new ReplicaCache(channel, 60_000);
  }

  onModuleInit(): void {
    this.channel.listenApplied(ACCESS_CHANNEL, () => this.verified.clear());
  }

  /** The operator behind an `adm_…` token, or null. */
  async authenticate(token: string): Promise<OperatorPrincipal | null> {
    if (this.root.verify(token)) return { admin: true, role: 'admin', actor: 'root' };
    if (!OPERATOR_TOKEN.test(token)) return null;
    const hash = sha256Hex(token);
    const known = this.verified.get(hash);
    if (known) {
      this.touch(known);
      return known.principal;
    }
    const generation = this.verified.begin();
    const row = await this.ds.manager.findOneBy(OperatorTokenEntity, { tokenHash: hash, revokedAt: IsNull() });
    if (!row) return null;
    const entry = {
      principal: { admin: true, role: row.role, actor: `operator:${row.name}`, operatorId: row.id } as const,
      touchedAt: row.lastUsedAt?.getTime() ?? 0,
    };
    this.touch(entry);
    this.verified.set(hash, entry, generation);
    return entry.principal;
  }

  /** A new named operator token: the secret is in this answer only. */
  async create(name: string, role: OperatorRole, by: ChangeBy): Promise<OperatorView & { token: string }> {
    const token = generateAdminToken();
    return this.ds.transaction(async (em) => {
      const taken = await em.findOneBy(OperatorTokenEntity, { name, revokedAt: IsNull() });
      if (taken) throw new DomainError('conflict', `an active operator token is already named '${name}'`);
      const id = randomUUID();
      await em.insert(OperatorTokenEntity, { id, name, role, tokenHash: sha256Hex(token), prefix: tokenPrefix(token) });
      await this.audit.record(em, { action: 'operator.create', tenantId: null, detail: { id, name, role }, by });
      return { ...view(await em.findOneByOrFail(OperatorTokenEntity, { id })), token };
    });
  }

  async list(): Promise<OperatorView[]> {
    const rows = await this.ds.manager.find(OperatorTokenEntity, { order: { createdAt: 'DESC', id: 'DESC' } });
    return rows.map(view);
  }

  /** Revokes a named operator token; refused from the next request on, on every replica, when this answers. */
  async revoke(id: string, by: ChangeBy): Promise<OperatorView> {
    if (!UUID_PATTERN.test(id)) throw DomainError.notFound('active operator token');
    const { row, heard } = await this.ds.transaction(async (em) => {
      const res = await em.update(OperatorTokenEntity, { id, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
      if (!res.affected) throw DomainError.notFound('active operator token');
      const row = await em.findOneByOrFail(OperatorTokenEntity, { id });
      await this.audit.record(em, { action: 'operator.revoke', tenantId: null, detail: { id, name: row.name }, by });
      return { row, ...(await this.streams.announce(em, [{ kind: 'operator_revoked', operatorId: id }])) };
    });
    this.verified.clear();
    await heard;
    return view(row);
  }

  private touch(entry: { principal: OperatorPrincipal; touchedAt: number }): void {
    const id = entry.principal.operatorId;
    const now = Date.now();
    if (!id || now - entry.touchedAt <= TOUCH_EVERY_MS) return;
    entry.touchedAt = now;
    this.ds
      .query(`UPDATE operator_tokens SET last_used_at = now() WHERE id = $1`, [id])
      .catch((err: unknown) => this.logger.warn({ err: safeError(err) }, 'could not record operator token use'));
  }
}
