import { Logger } from '@nestjs/common';
import type { CryptoKey } from 'jose';
import { parseHostList } from '../../common/net/egress.js';
import { discoverJwksUri, fetchJwks, KeySourceError, type FetchLimits, type IssuerKey } from './jwks-fetch.js';
import type { AsymmetricAlgorithm, TrustedIssuer } from './trusted-issuer.js';

/** A JWK Set or discovery document larger than this is refused, not parsed. */
export const MAX_KEY_DOCUMENT_BYTES = 256 * 1024;
/** How soon an issuer none of whose keys is known yet is asked again (at most; `jwksRefreshMs` when shorter). */
export const RETRY_WITHOUT_KEYS_MS = 5_000;
/** Keys beyond this many in one JWK Set are ignored. */
export const MAX_KEYS_PER_ISSUER = 100;

export interface IssuerKeysOptions {
  /** `ARBITER_IDENTITY_ALLOWLIST`: hosts that may be loopback or private, and plain http. */
  identityAllowlist: string;
  /** `ARBITER_JWKS_REFRESH_MS`: an issuer's keys are fetched at most this often on unknown key ids. */
  jwksRefreshMs: number;
  /** `ARBITER_JWKS_TIMEOUT_MS`: one request for a discovery document or a JWK Set. */
  jwksTimeoutMs: number;
  /** The clock, in epoch milliseconds. */
  now?: () => number;
  /** Where warnings go (an issuer that cannot be reached, keys ignored); never with token contents. */
  warn?: (message: string) => void;
}

/** Why no key was found for a token. */
export type KeyMiss =
  /** Nothing is known of the issuer's keys: never fetched successfully. */
  | 'unavailable'
  /** The token's `kid` is not among the issuer's keys (for its algorithm), even after a refetch allowed by the rate. */
  | 'unknown_kid'
  /** The token names no `kid` and the issuer has no key for its algorithm. */
  | 'no_key_for_alg'
  /** The token names no `kid` and the issuer has several keys for its algorithm. */
  | 'ambiguous';

export class KeyNotFound extends Error {
  constructor(
    readonly miss: KeyMiss,
    /** For the log: why the keys are unavailable, when they are. */
    readonly detail?: string,
  ) {
    super(`no signing key: ${miss}${detail ? ` (${detail})` : ''}`);
    this.name = 'KeyNotFound';
  }
}

interface Entry {
  issuer: TrustedIssuer;
  /** What the cached keys depend on: a change of any of it starts afresh. */
  fingerprint: string;
  /** The last good keys; null until a fetch has succeeded. */
  keys: IssuerKey[] | null;
  /** The discovery document's `jwks_uri`, kept until a JWKS fetch fails. */
  discovered: string | null;
  /** When the last fetch on demand started (success or not), for the rate limit. */
  attemptedAt: number | null;
  lastError: string | null;
  inflight: Promise<void> | null;
}

/**
 * The signing keys of each trusted issuer, cached. An unknown `kid` refetches the issuer's keys at most once per
 * `jwksRefreshMs` (concurrent misses share one fetch, so a storm of made-up key ids costs one request per interval);
 * while the issuer cannot be reached or answers garbage, the last good keys stay in use, and only an issuer never
 * fetched successfully fails closed. `refreshAll` (scheduled by `startRefreshing` or by the caller) refetches every
 * issuer so that retired keys stop verifying.
 */
export class IssuerKeys {
  readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private readonly limits: FetchLimits;
  private readonly refreshMs: number;
  private readonly warn: (message: string) => void;

  constructor(options: IssuerKeysOptions) {
    this.now = options.now ?? Date.now;
    this.refreshMs = options.jwksRefreshMs;
    this.limits = {
      policy: { allowPrivate: false, allowHosts: parseHostList(options.identityAllowlist) },
      timeoutMs: options.jwksTimeoutMs,
      maxBytes: MAX_KEY_DOCUMENT_BYTES,
      maxKeys: MAX_KEYS_PER_ISSUER,
    };
    const logger = new Logger('IssuerKeys');
    this.warn = options.warn ?? ((message) => logger.warn(message));
  }

  /** The key that verifies a token of `issuer` with this `kid` (or none) and `alg`; throws `KeyNotFound`. */
  async keyFor(issuer: TrustedIssuer, kid: string | undefined, alg: AsymmetricAlgorithm): Promise<CryptoKey> {
    const entry = this.entryFor(issuer);
    if (entry.keys === null) await this.refresh(entry, false);
    let found = pick(entry.keys, kid, alg);
    if (found instanceof KeyNotFound && found.miss !== 'ambiguous' && entry.keys !== null) {
      // The issuer may have rotated: fetch again, if the rate allows (or join the fetch under way).
      await this.refresh(entry, false);
      found = pick(entry.keys, kid, alg);
    }
    if (found instanceof KeyNotFound && found.miss === 'unavailable') {
      throw new KeyNotFound('unavailable', entry.lastError ?? undefined);
    }
    if (found instanceof KeyNotFound) throw found;
    return found;
  }

  /** Whether the cached keys of the issuer `issuerId` include `kid`. */
  knows(issuerId: string, kid: string): boolean {
    return this.entries.get(issuerId)?.keys?.some((k) => k.kid === kid) ?? false;
  }

  /** Fetches every known issuer's keys again now (sharing a fetch under way); never rejects. */
  async refreshAll(): Promise<void> {
    await Promise.all([...this.entries.values()].map((entry) => this.refresh(entry, true)));
  }

  /** Calls `refreshAll` every `jwksRefreshMs` (the timer does not keep the process alive); returns the stop. */
  startRefreshing(): () => void {
    const timer = setInterval(() => void this.refreshAll(), this.refreshMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Drops what is cached for an issuer (removed, or changed). */
  forget(issuerId: string): void {
    this.entries.delete(issuerId);
  }

  private entryFor(issuer: TrustedIssuer): Entry {
    const fingerprint = JSON.stringify([issuer.issuer, issuer.jwksUri, issuer.algorithms]);
    const known = this.entries.get(issuer.id);
    if (known?.fingerprint === fingerprint) {
      known.issuer = issuer;
      return known;
    }
    const entry: Entry = {
      issuer,
      fingerprint,
      keys: null,
      discovered: null,
      attemptedAt: null,
      lastError: null,
      inflight: null,
    };
    this.entries.set(issuer.id, entry);
    return entry;
  }

  /**
   * Fetches the entry's keys, unless a fetch is under way (joined) or, unless forced, one on demand started too
   * recently. The background refresh (forced) does not count against the rate: it runs every interval, so it would
   * leave no room for the fetch on an unknown kid, and an issuer's new key would be refused until the next refresh.
   */
  private refresh(entry: Entry, force: boolean): Promise<void> {
    if (entry.inflight) return entry.inflight;
    if (!force) {
      const now = this.now();
      // While no key is known every token is refused, so an issuer that could not be reached is tried again sooner.
      const interval = entry.keys === null ? Math.min(this.refreshMs, RETRY_WITHOUT_KEYS_MS) : this.refreshMs;
      if (entry.attemptedAt !== null && now - entry.attemptedAt < interval) return Promise.resolve();
      entry.attemptedAt = now;
    }
    entry.inflight = this.fetch(entry).finally(() => {
      entry.inflight = null;
    });
    return entry.inflight;
  }

  private async fetch(entry: Entry): Promise<void> {
    const { issuer } = entry;
    try {
      const uri = issuer.jwksUri ?? (entry.discovered ??= await discoverJwksUri(issuer, this.limits));
      const { keys, ignored } = await fetchJwks(uri, issuer.algorithms, this.limits).catch((err: unknown) => {
        entry.discovered = null;
        throw err;
      });
      entry.keys = keys;
      entry.lastError = null;
      if (ignored > 0) {
        this.warn(`issuer "${issuer.id}": ${ignored} of the JWKS's keys are not usable signing keys and were ignored`);
      }
    } catch (err) {
      const detail = err instanceof KeySourceError ? err.message : `unexpected error: ${String(err)}`;
      entry.lastError = detail;
      const kept = entry.keys ? `; still using the ${entry.keys.length} keys fetched before` : '';
      this.warn(`issuer "${issuer.id}": signing keys not fetched: ${detail}${kept}`);
    }
  }
}

/** The one key for `kid` (or, without a kid, the only key) that verifies `alg`. */
function pick(keys: IssuerKey[] | null, kid: string | undefined, alg: AsymmetricAlgorithm): CryptoKey | KeyNotFound {
  if (keys === null) return new KeyNotFound('unavailable');
  const candidates = keys.filter((k) => kid === undefined || k.kid === kid).flatMap((k) => k.byAlg.get(alg) ?? []);
  const [first] = candidates;
  if (first && candidates.length === 1) return first;
  if (kid !== undefined) return candidates.length === 0 ? new KeyNotFound('unknown_kid') : new KeyNotFound('ambiguous');
  return new KeyNotFound(candidates.length === 0 ? 'no_key_for_alg' : 'ambiguous');
}
