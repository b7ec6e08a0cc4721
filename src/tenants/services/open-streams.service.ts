import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TenantRepository } from '../repositories/tenant.repository.js';

/** The PostgreSQL channel of access changes: `tenant_disabled|<tenant id>` or `token_revoked|<token id>`. */
export const ACCESS_CHANNEL = 'arbiter_access';

/** An access change that ends the streams opened under it. */
export type AccessChange =
  | { kind: 'tenant_disabled'; tenantId: string }
  | { kind: 'token_revoked'; tokenId: string }
  /** The tenant's quotas changed: cached principals (which carry them) are dropped; streams stay open. */
  | { kind: 'tenant_limits'; tenantId: string };

interface OpenStream {
  principal: TenantPrincipal;
  abort: AbortController;
}

const MESSAGES: Record<'tenant_disabled' | 'token_revoked', string> = {
  tenant_disabled: 'the tenant was disabled; this stream is closed',
  token_revoked: 'the token this stream was opened with was revoked; this stream is closed',
};

/**
 * Long requests opened with a tenant token — SSE streams and blocking
 * sends — held until they end. Revoking the token or disabling the tenant
 * ends them on every replica within moments: the change is announced with
 * NOTIFY in the transaction that makes it, applied at once on the replica
 * that made it, and after a lost notice connection every held token is
 * checked again. The stream's abort reason is an `unauthorized` error, so
 * its last frame says why.
 */
@Injectable()
export class OpenStreams implements OnModuleInit {
  private readonly logger = new Logger('OpenStreams');
  private readonly open = new Set<OpenStream>();

  constructor(
    private readonly channel: ReplicaChannel,
    private readonly tenants: TenantRepository,
  ) {}

  onModuleInit(): void {
    this.channel.listenApplied(ACCESS_CHANNEL, (payload) => {
      const [kind, id] = payload.split('|');
      if (!id) return;
      if (kind === 'tenant_disabled') this.apply({ kind, tenantId: id });
      else if (kind === 'token_revoked') this.apply({ kind, tokenId: id });
    });
    this.channel.onReconnect(() => void this.recheck());
  }

  /** Holds a stream until the returned release is called; `abort` fires if its access goes. */
  hold(principal: TenantPrincipal, abort: AbortController): () => void {
    const entry = { principal, abort };
    this.open.add(entry);
    return () => this.open.delete(entry);
  }

  /**
   * Announces changes to the other replicas when the transaction `em`
   * commits. The returned promise resolves once every listening replica
   * has applied them after the commit (see `ReplicaChannel.appliedEverywhere`).
   */
  async announce(em: EntityManager, changes: AccessChange[]): Promise<{ heard: Promise<unknown> }> {
    const heard: Promise<void>[] = [];
    for (const c of changes) {
      const payload = `${c.kind}|${c.kind === 'token_revoked' ? c.tokenId : c.tenantId}`;
      heard.push(this.channel.appliedEverywhere(ACCESS_CHANNEL, payload).done);
      await em.query(`SELECT pg_notify($1, $2)`, [ACCESS_CHANNEL, payload]);
    }
    return { heard: Promise.all(heard) };
  }

  /** Ends the streams a committed change affects, here. */
  apply(change: AccessChange): void {
    if (change.kind === 'tenant_limits') return;
    for (const s of [...this.open]) {
      const hit =
        change.kind === 'tenant_disabled'
          ? s.principal.tenantId === change.tenantId
          : s.principal.tokenId === change.tokenId;
      if (hit) this.end(s, MESSAGES[change.kind]);
    }
  }

  /** Checks every held stream's token again (after notices may have been missed). */
  async recheck(): Promise<void> {
    const tokenIds = [...new Set([...this.open].map((s) => s.principal.tokenId))];
    if (tokenIds.length === 0) return;
    let usable: Set<string>;
    try {
      usable = new Set(await this.tenants.usableTokens(tokenIds));
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not check the tokens of open streams');
      return;
    }
    for (const s of [...this.open]) {
      if (!usable.has(s.principal.tokenId))
        this.end(s, 'the token or tenant of this stream is no longer active; this stream is closed');
    }
  }

  private end(s: OpenStream, message: string): void {
    this.open.delete(s);
    if (!s.abort.signal.aborted) s.abort.abort(new DomainError('unauthorized', message));
  }
}
