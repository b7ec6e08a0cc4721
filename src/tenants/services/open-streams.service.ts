import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { TenantRepository } from '../repositories/tenant.repository.js';

/** The PostgreSQL channel of access changes: `<kind>|<id>` (see `AccessChange`). */
export const ACCESS_CHANNEL = 'arbiter_access';

/** An access change that ends the streams opened under it. Every one drops cached credentials on every replica. */
export type AccessChange =
  | { kind: 'tenant_disabled'; tenantId: string }
  | { kind: 'token_revoked'; tokenId: string }
  /** A trusted issuer was removed or changed: its JWTs are refused and their streams end. */
  | { kind: 'issuer_removed'; issuerId: string }
  /** A named operator token was revoked. */
  | { kind: 'operator_revoked'; operatorId: string }
  /** The tenant's quotas changed: cached principals (which carry them) are dropped; streams stay open. */
  | { kind: 'tenant_limits'; tenantId: string };

const idOf = (c: AccessChange): string => {
  switch (c.kind) {
    case 'token_revoked':
      return c.tokenId;
    case 'issuer_removed':
      return c.issuerId;
    case 'operator_revoked':
      return c.operatorId;
    case 'tenant_disabled':
    case 'tenant_limits':
      return c.tenantId;
  }
};

/** The change a notice's payload names, or undefined. */
export function changeOf(payload: string): AccessChange | undefined {
  const [kind, id] = payload.split('|');
  if (!id) return undefined;
  switch (kind) {
    case 'tenant_disabled':
    case 'tenant_limits':
      return { kind, tenantId: id };
    case 'token_revoked':
      return { kind, tokenId: id };
    case 'issuer_removed':
      return { kind, issuerId: id };
    case 'operator_revoked':
      return { kind, operatorId: id };
    default:
      return undefined;
  }
}

interface OpenStream {
  principal: TenantPrincipal;
  abort: AbortController;
}

const MESSAGES: Record<'tenant_disabled' | 'token_revoked' | 'issuer_removed', string> = {
  tenant_disabled: 'the tenant was disabled; this stream is closed',
  token_revoked: 'the token this stream was opened with was revoked; this stream is closed',
  issuer_removed: 'the issuer of the token this stream was opened with is no longer trusted; this stream is closed',
};

/** The longest a timer may wait (setTimeout's limit); a later expiry is checked again then. */
const MAX_TIMER_MS = 2_147_483_647;

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
      const change = changeOf(payload);
      if (change) this.apply(change);
    });
    this.channel.onReconnect(() => void this.recheck());
  }

  /** Holds a stream until the returned release is called; `abort` fires if its access goes. */
  /**
   * Holds a stream until the returned release is called; `abort` fires if
   * its access goes. A JWT's stream also ends when the token expires: the
   * client subscribes again with a fresh token.
   */
  hold(principal: TenantPrincipal, abort: AbortController): () => void {
    const entry = { principal, abort };
    this.open.add(entry);
    let timer: NodeJS.Timeout | undefined;
    const expiresAt = principal.jwt?.expiresAt;
    if (expiresAt !== undefined) {
      const arm = (): void => {
        const wait = expiresAt - Date.now();
        if (wait <= 0) return this.end(entry, EXPIRED);
        timer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
        timer.unref();
      };
      arm();
    }
    return () => {
      clearTimeout(timer);
      this.open.delete(entry);
    };
  }

  /**
   * Announces changes to the other replicas when the transaction `em`
   * commits. The returned promise resolves once every listening replica
   * has applied them after the commit (see `ReplicaChannel.appliedEverywhere`).
   */
  async announce(em: EntityManager, changes: AccessChange[]): Promise<{ heard: Promise<unknown> }> {
    const heard: Promise<void>[] = [];
    for (const c of changes) {
      const payload = `${c.kind}|${idOf(c)}`;
      heard.push(this.channel.appliedEverywhere(ACCESS_CHANNEL, payload).done);
      await em.query(`SELECT pg_notify($1, $2)`, [ACCESS_CHANNEL, payload]);
    }
    return { heard: Promise.all(heard) };
  }

  /** Ends the streams a committed change affects, here. */
  apply(change: AccessChange): void {
    if (change.kind === 'tenant_limits' || change.kind === 'operator_revoked') return;
    for (const s of [...this.open]) {
      const hit =
        change.kind === 'tenant_disabled'
          ? s.principal.tenantId === change.tenantId
          : change.kind === 'issuer_removed'
            ? s.principal.jwt?.issuerId === change.issuerId
            : s.principal.tokenId === change.tokenId;
      if (hit) this.end(s, MESSAGES[change.kind]);
    }
  }

  /** Checks every held stream's token again (after notices may have been missed). */
  async recheck(): Promise<void> {
    const open = [...this.open];
    const tokenIds = [...new Set(open.filter((s) => !s.principal.jwt).map((s) => s.principal.tokenId))];
    const jwts = open.flatMap((s) => (s.principal.jwt ? [`${s.principal.tenantId}|${s.principal.jwt.issuerId}`] : []));
    if (tokenIds.length === 0 && jwts.length === 0) return;
    let usable: Set<string>;
    try {
      usable = new Set([
        ...(tokenIds.length ? await this.tenants.usableTokens(tokenIds) : []),
        ...(jwts.length ? await this.tenants.usableJwtAccess([...new Set(jwts)]) : []),
      ]);
    } catch (err) {
      this.logger.warn({ err: safeError(err) }, 'could not check the credentials of open streams');
      return;
    }
    for (const s of open) {
      const key = s.principal.jwt ? `${s.principal.tenantId}|${s.principal.jwt.issuerId}` : s.principal.tokenId;
      if (!usable.has(key))
        this.end(s, 'the credential or tenant of this stream is no longer active; this stream is closed');
    }
  }

  private end(s: OpenStream, message: string): void {
    if (!this.open.has(s)) return;
    this.open.delete(s);
    if (!s.abort.signal.aborted) s.abort.abort(new DomainError('unauthorized', message));
  }
}

const EXPIRED = 'the token this stream was opened with expired; subscribe again with a fresh token';
