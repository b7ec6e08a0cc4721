import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { JWTPayload } from 'jose';
import {
  isTenantScope,
  TENANT_SCOPES,
  type OperatorPrincipal,
  type Principal,
  type TenantScope,
} from '../../common/auth.decorators.js';
import { SubjectToken } from '../../common/subject-token.js';
import { AppConfig } from '../../config/app-config.js';
import { ReplicaCache } from '../../database/replica-cache.js';
import { ReplicaChannel } from '../../database/replica-channel.service.js';
import { BearerRefusalError } from '../auth/bearer-refusal.js';
import type { TenantEntity } from '../entities/tenant.entity.js';
import { TenantRepository } from '../repositories/tenant.repository.js';
import { ACCESS_CHANNEL } from '../services/open-streams.service.js';
import { EXTERNAL_ID } from '../dto/tenant.dto.js';
import { sha256Hex } from '../services/token-crypto.js';
import { IssuerDirectory } from './issuer-directory.service.js';
import { IssuerKeys } from './issuer-keys.js';
import { JwtRefusal, JwtVerifier } from './jwt-verifier.js';
import { OPERATOR_ROLES, type TrustedIssuer } from './trusted-issuer.js';

interface Verified {
  principal: Principal;
  expiresAt: number;
  issuerId: string;
  kid?: string;
}

/** A claim value as a list of strings: an array of strings, or a space-separated string (`scope`). */
function values(claim: unknown): string[] {
  if (typeof claim === 'string') return claim.split(' ').filter(Boolean);
  if (Array.isArray(claim)) return claim.filter((v): v is string => typeof v === 'string');
  return [];
}

/** Printable, bounded: an actor id goes into audit rows and log lines. */
const printable = (s: string): string => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 160);

/** `jwt:<iss>|<sub>`, and `|<client>` when the token's client (`azp`, `client_id`) is not its subject. */
export function jwtActor(claims: JWTPayload): string {
  const client = [claims.azp, claims.client_id].find((c): c is string => typeof c === 'string' && c !== '');
  const sub = typeof claims.sub === 'string' && claims.sub !== '' ? claims.sub : client;
  const parts = [claims.iss ?? '', sub ?? ''];
  if (client && client !== sub) parts.push(client);
  return `jwt:${parts.map((p) => printable(String(p))).join('|')}`;
}

/** The Arbiter scopes a token's `scope`/`scp` grants: a value equal to a scope name, or mapped by the issuer. */
export function scopesOf(claims: JWTPayload, issuer: TrustedIssuer): TenantScope[] {
  const granted = new Set<TenantScope>();
  for (const v of [...values(claims.scope), ...values(claims.scp)]) {
    if (isTenantScope(v)) granted.add(v);
    // Own keys only: a scope named `constructor` or `toString` is no key of the map.
    const mappedTo = Object.hasOwn(issuer.scopeMap, v) ? issuer.scopeMap[v] : undefined;
    for (const mapped of Array.isArray(mappedTo) ? mappedTo : []) if (isTenantScope(mapped)) granted.add(mapped);
  }
  return TENANT_SCOPES.filter((s) => granted.has(s));
}

/**
 * JWT access tokens of trusted issuers as principals: verified by
 * `JwtVerifier` (keys from `IssuerKeys`), then mapped — an operator when
 * the issuer's role claim grants `arbiter:admin` or `arbiter:auditor`,
 * else the tenant the issuer is bound to or its tenant claim names (by
 * `external_id`), with the scopes its `scope`/`scp` grants. Verified tokens
 * are kept by hash until they expire (at most a minute between checks of
 * the tenant), dropped on any access change, on a change of their issuer,
 * and when their key leaves the issuer's key set.
 */
@Injectable()
export class JwtPrincipals implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('JwtPrincipals');
  private readonly keys: IssuerKeys;
  private readonly verifier: JwtVerifier;
  private readonly verified: ReplicaCache<Verified>;
  private stopRefreshing?: () => void;

  constructor(
    private readonly issuers: IssuerDirectory,
    private readonly tenants: TenantRepository,
    private readonly channel: ReplicaChannel,
    config: AppConfig,
  ) {
    this.keys = new IssuerKeys({
      identityAllowlist: config.identityAllowlist,
      jwksRefreshMs: config.jwksRefreshMs,
      jwksTimeoutMs: config.jwksTimeoutMs,
    });
    this.verifier = new JwtVerifier(this.keys);
    this.verified = new ReplicaCache(channel, 60_000);
  }

  onModuleInit(): void {
    this.channel.listenApplied(ACCESS_CHANNEL, () => this.forget());
    this.issuers.onChange((id) => {
      this.keys.forget(id);
      this.verified.clear();
    });
    this.stopRefreshing = this.keys.startRefreshing();
  }

  onModuleDestroy(): void {
    this.stopRefreshing?.();
  }

  /** Drops every verified token (an access change was committed here or announced by another replica). */
  forget(): void {
    this.verified.clear();
  }

  /** The principal of a JWT, or a `BearerRefusalError` saying why not. */
  async authenticate(token: string): Promise<Principal> {
    const hash = sha256Hex(token);
    const known = this.verified.get(hash);
    if (
      known &&
      known.expiresAt > Date.now() &&
      (known.kid === undefined || this.keys.knows(known.issuerId, known.kid))
    ) {
      return known.principal;
    }
    const generation = this.verified.begin();
    let jwt;
    try {
      jwt = await this.verifier.verify(token, (iss) => this.issuers.find(iss));
    } catch (err) {
      if (err instanceof JwtRefusal) {
        if (err.detail) this.logger.debug({ reason: err.reason, detail: err.detail }, 'JWT refused');
        throw new BearerRefusalError(err.reason, err.status);
      }
      throw err;
    }
    const principal = (await this.principalOf(jwt.claims, jwt.issuer, jwt.expiresAt)) satisfies Principal;
    // Kept (with the cached principal: the cache is by this token's hash) for calls on the caller's behalf.
    if ('tenantId' in principal) {
      Object.defineProperty(principal, 'subject', { value: new SubjectToken(token), enumerable: false });
    }
    this.verified.set(hash, { principal, expiresAt: jwt.expiresAt, issuerId: jwt.issuer.id, kid: jwt.kid }, generation);
    return principal;
  }

  private async principalOf(claims: JWTPayload, issuer: TrustedIssuer, expiresAt: number): Promise<Principal> {
    const actor = jwtActor(claims);
    const jwt = { issuerId: issuer.id, expiresAt };
    // Operators come only from issuers the operators trust for all tenants (never from a tenant's own IdP).
    if (issuer.roleClaim && !issuer.tenantId) {
      const roles = values(claims[issuer.roleClaim]);
      const role = roles.includes(OPERATOR_ROLES.admin)
        ? 'admin'
        : roles.includes(OPERATOR_ROLES.auditor)
          ? 'auditor'
          : undefined;
      if (role) return { admin: true, role, actor, jwt } satisfies OperatorPrincipal;
    }
    const tenant = await this.tenantOf(claims, issuer);
    if (tenant.disabledAt) throw new BearerRefusalError('tenant is disabled');
    return {
      tenantId: tenant.id,
      tenantName: tenant.name,
      tokenId: `jwt:${sha256Hex(`${issuer.id}|${actor}|${expiresAt}`).slice(0, 16)}`,
      tokenPrefix: 'jwt',
      limits: {
        sendsPerMinute: tenant.sendsPerMinute,
        maxRunningTasks: tenant.maxRunningTasks,
        maxOpenStreams: tenant.maxOpenStreams,
      },
      scopes: scopesOf(claims, issuer),
      actor,
      jwt,
    };
  }

  private async tenantOf(claims: JWTPayload, issuer: TrustedIssuer): Promise<TenantEntity> {
    if (issuer.tenantId) {
      const tenant = await this.tenants.findTenant(issuer.tenantId);
      if (!tenant) throw new BearerRefusalError('token names no tenant of this deployment', 403);
      return tenant;
    }
    const claim = issuer.tenantClaim;
    if (!claim) {
      throw new BearerRefusalError(
        issuer.roleClaim ? 'token grants no operator role (arbiter:admin or arbiter:auditor)' : 'token names no tenant',
        403,
      );
    }
    const value = claims[claim];
    if (typeof value !== 'string' || value === '' || value.length > 256) {
      throw new BearerRefusalError(`token has no tenant claim "${claim}" (or no operator role)`, 403);
    }
    // A value no tenant's external_id can be (a NUL, a space, non-ASCII) names none, and is not sent to the database.
    const tenant = EXTERNAL_ID.test(value) ? await this.tenants.findByExternalId(value) : null;
    if (!tenant) throw new BearerRefusalError('token names no tenant of this deployment', 403);
    return tenant;
  }
}
