import { AgentCard } from '@a2a-js/sdk';
import {
  Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type { AppConfig } from '../config/app-config.js';
import type { EgressPolicy } from '../common/net/egress.js';
import { fingerprintOf, type OutboundCredentials } from '../outbound-auth/outbound-credentials.service.js';
import { egressFetch, RemoteCallError } from './egress-fetch.js';
import { EgressGrpcTransportFactory } from './egress-grpc.js';
import type { RemoteAgent } from './remote-registry.service.js';
import { unusableCard } from './remote-errors.js';
import { checkCard, type CardTrust } from './card-pinning.js';
import { secretsOf, stripKnownSecrets } from '../outbound-auth/credentials.js';

const MAX_TTL_MS = 86_400_000;
const MAX_CARDS = 4_096;

type Json = Record<string, unknown>;

/** A remote's card, and the SDK client built from it. */
export interface CachedCard {
  /** url, card url and credential: a registry edit that changes any makes a new entry. */
  key: string;
  /**
   * The card as Arbiter shows it — to the model (`/a2a list`, `/a2a card`, the roster) and as a remote-backed
   * agent's own card: what the remote says of itself, with the entry's secrets taken out (`shownCard`).
   */
  card: AgentCard;
  client: Client;
  expiresAt: number;
  etag?: string;
  /** Where the card was found, and whether it was asked for as v1.0. */
  source: string;
  versioned: boolean;
  /** With a `card_signature` pin: how the card's signature was checked. */
  trust?: CardTrust;
}

/**
 * Remote agents' cards, fetched through the egress guard and cached by
 * name (TTL, Cache-Control, ETag revalidation), each with the SDK client
 * (v1.0 or v0.3, whichever the card offers) built from it.
 */
export class RemoteCards {
  private readonly cards = new Map<string, CachedCard>();

  constructor(
    private readonly config: AppConfig,
    private readonly policy: EgressPolicy,
    private readonly credentials: OutboundCredentials,
  ) {}

  /** Drops a remote's cached card (its endpoint moved, or speaks another version now). */
  forget(remote: RemoteAgent): void {
    this.cards.delete(cacheKey(remote));
  }

  /** The remote's card and client, cached (TTL, Cache-Control, ETag revalidation). */
  async cardFor(remote: RemoteAgent, signal: AbortSignal): Promise<CachedCard> {
    const key = `${remote.url}\n${remote.cardUrl ?? ''}\n${fingerprintOf(remote.auth)}\n${JSON.stringify(remote.cardSignature ?? null)}`;
    const cached = this.cards.get(cacheKey(remote));
    if (cached && cached.key === key && cached.expiresAt > Date.now()) return cached;
    const fresh = await this.fetchCard(remote, key, cached?.key === key ? cached : undefined, signal);
    // Bounded: tenants' own entries add to the operator's; the oldest card goes first.
    if (!this.cards.has(cacheKey(remote)) && this.cards.size >= MAX_CARDS) {
      this.cards.delete(this.cards.keys().next().value as string);
    }
    this.cards.set(cacheKey(remote), fresh);
    return fresh;
  }

  private async fetchCard(
    remote: RemoteAgent,
    key: string,
    previous: CachedCard | undefined,
    signal: AbortSignal,
  ): Promise<CachedCard> {
    const origin = new URL(remote.url).origin;
    const credential = this.credentials.credentialFor(remote.auth);
    const fetchImpl = egressFetch(this.policy, credential, this.config.a2aCardTimeoutMs, origin, true);
    const get = (url: string, versioned: boolean, etag?: string) =>
      fetchImpl(url, {
        headers: {
          accept: 'application/json',
          ...(versioned ? { 'a2a-version': '1.0' } : {}),
          ...(etag ? { 'if-none-match': etag } : {}),
        },
        signal,
      });
    // `card_url` when the registry names one; else `<url>/agent-card.json` (the seed's rule), then the
    // origin's well-known card. Each is asked for as v1.0 first, then without a version (a version-aware
    // v0.3 server refuses a 1.0 request for its card).
    const primary = remote.cardUrl ?? `${remote.url}/agent-card.json`;
    const wellKnown = `${new URL(remote.url).origin}/.well-known/agent-card.json`;
    const attempts: [string, boolean][] = previous
      ? [[previous.source, previous.versioned]]
      : [
          [primary, true],
          [primary, false],
          ...(remote.cardUrl
            ? []
            : ([
                [wellKnown, true],
                [wellKnown, false],
              ] as [string, boolean][])),
        ];
    let res: Response | undefined;
    let source = primary;
    let versioned = true;
    let firstError: unknown;
    for (const [url, v] of attempts) {
      try {
        res = await get(url, v, previous?.etag);
        source = url;
        versioned = v;
        break;
      } catch (err) {
        firstError ??= err;
        if (!(err instanceof RemoteCallError && /^HTTP (400|404|406)/.test(err.message))) throw err;
      }
    }
    if (!res) throw firstError;
    const ttl = ttlOf(res.headers.get('cache-control'), this.config.a2aCardTtlMs);
    if (res.status === 304 && previous) return { ...previous, expiresAt: Date.now() + ttl };
    if (res.status !== 200) throw new RemoteCallError('http', `HTTP ${res.status}`);
    let raw: unknown;
    try {
      raw = await res.json();
    } catch {
      throw new RemoteCallError('malformed', 'the body is not JSON');
    }
    if (!looksLikeCard(raw)) throw new RemoteCallError('malformed', 'the body is not a valid AgentCard');
    // A pinned card is checked before anything of it is used (fail closed: a `CardSignatureError`).
    const pin = remote.cardSignature;
    const trust = pin ? await checkCard(raw, pin, this.policy, this.config.a2aCardTimeoutMs, signal) : undefined;
    const fetchForCalls = egressFetch(this.policy, credential, this.config.a2aTimeoutMs, origin);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: fetchForCalls, legacyCompat: { enabled: true } });
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        // Every binding the card may offer, each through the egress guard with the entry's credential; JSON-RPC
        // first, then HTTP+JSON, then gRPC (a gRPC-only upstream is reached over gRPC).
        transports: [
          new JsonRpcTransportFactory({ fetchImpl: fetchForCalls, legacyCompat: { enabled: true } }),
          new RestTransportFactory({ fetchImpl: fetchForCalls, legacyCompat: { enabled: true } }),
          new EgressGrpcTransportFactory(
            this.policy,
            credential ? { credential, host: new URL(remote.url).hostname } : undefined,
            this.config.a2aTimeoutMs,
          ),
        ],
        preferredTransports: ['JSONRPC', 'HTTP+JSON', 'GRPC'],
        cardResolver: resolver,
      }),
    );
    let card: AgentCard;
    let client: Client;
    try {
      card = resolver.normalizeAgentCard(raw);
      client = await factory.createFromAgentCard(card);
    } catch (err) {
      throw unusableCard(err);
    }
    const etag = res.headers.get('etag') ?? undefined;
    return {
      key,
      card: shownCard(card, secretsOf(remote.auth)),
      client,
      expiresAt: Date.now() + ttl,
      etag,
      source,
      versioned,
      ...(trust ? { trust } : {}),
    };
  }
}

/** Cards are kept by entry: an operator's by name, a tenant's own by tenant and name (two tenants' "peer" differ). */
const cacheKey = (remote: RemoteAgent): string => `${remote.owner ?? ''}\n${remote.name}`;

function looksLikeCard(v: unknown): v is Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const c = v as Json;
  if (typeof c.name !== 'string') return false;
  return (Array.isArray(c.supportedInterfaces) && c.supportedInterfaces.length > 0) || typeof c.url === 'string';
}

/**
 * What a remote says of itself — its name, description, provider, version and skills — with the entry's secrets
 * and the tokens Arbiter was issued taken out: a remote may quote the credential it was sent (a header it echoes
 * into its card), which tenants' readers of cards and the model must not see. Its interfaces and security schemes
 * stay as they are; the client, built from the card as sent, calls them.
 */
export function shownCard(card: AgentCard, secrets: readonly string[]): AgentCard {
  // A card normalised from v0.3 may leave out what the 1.0 type says is there: each field is taken as it is.
  const strip = <T>(text: T): T => (typeof text === 'string' ? (stripKnownSecrets(text, secrets) as T) : text);
  const each = <L extends unknown[] | undefined>(list: L): L => list?.map(strip) as L;
  return {
    ...card,
    name: strip(card.name),
    description: strip(card.description),
    version: strip(card.version),
    provider: card.provider && { url: strip(card.provider.url), organization: strip(card.provider.organization) },
    documentationUrl: strip(card.documentationUrl),
    iconUrl: strip(card.iconUrl),
    skills: (card.skills as AgentCard['skills'] | undefined)?.map((skill) => ({
      ...skill,
      id: strip(skill.id),
      name: strip(skill.name),
      description: strip(skill.description),
      tags: each(skill.tags),
      examples: each(skill.examples),
    })) as AgentCard['skills'],
  };
}

/** Cache lifetime: `max-age` when the remote sends one (`no-store`/`no-cache`: revalidate every use). */
function ttlOf(cacheControl: string | null, fallback: number): number {
  if (!cacheControl) return fallback;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) return 0;
  const m = /\bmax-age=(\d+)/i.exec(cacheControl);
  return m?.[1] ? Math.min(Number(m[1]) * 1000, MAX_TTL_MS) : fallback;
}
