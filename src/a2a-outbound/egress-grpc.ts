import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import type { AgentCard } from '@a2a-js/sdk';
import type { RequestOptions, Transport, TransportFactory } from '@a2a-js/sdk/client';
import { checkUrl, EgressError, refusal, type EgressPolicy } from '../common/net/egress.js';
import { currentSubject } from '../outbound-auth/caller-context.js';
import type { Credential } from '../outbound-auth/credentials.js';

/** gRPC and the SDK's gRPC transport, loaded on the first call to a gRPC upstream (most servers never make one). */
let grpcLibraries: Promise<[typeof import('@grpc/grpc-js'), typeof import('@a2a-js/sdk/client/grpc')]> | undefined;
const loadGrpc = () => (grpcLibraries ??= Promise.all([import('@grpc/grpc-js'), import('@a2a-js/sdk/client/grpc')]));

/** The endpoint of a card's gRPC interface: `host:port`, optionally with a scheme (`grpcs://`, `https://` mean TLS). */
function parseEndpoint(raw: string): { host: string; port: string; tls: boolean } {
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^/]+?)\/?$/i.exec(raw.trim());
  if (!m?.[2]) throw new EgressError('bad_url', 'not a valid gRPC endpoint');
  const scheme = (m[1] ?? '').toLowerCase();
  if (scheme && !['grpc', 'grpcs', 'http', 'https', 'dns'].includes(scheme)) {
    throw new EgressError('bad_url', `scheme ${scheme} is not allowed for gRPC`);
  }
  let url: URL;
  try {
    url = new URL(`http://${m[2]}`);
  } catch {
    throw new EgressError('bad_url', 'not a valid gRPC endpoint');
  }
  if (url.username || url.password) throw new EgressError('bad_url', 'credentials in the URL are not allowed');
  const tls = scheme === 'grpcs' || scheme === 'https' || url.port === '443';
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || (tls ? '443' : '80'), tls };
}

/** Every address a host name resolves to (`dns.lookup` with `all`, as the HTTP egress resolves); tests pass their own. */
export type ResolveAll = (host: string) => Promise<{ address: string; family: number }[]>;

const resolveAll: ResolveAll = (host) => lookup(host, { all: true });

/**
 * The checked address to connect to for a gRPC endpoint: a literal address is checked as the HTTP egress checks
 * one (`checkUrl`), every address a name resolves to is judged by the egress policy (as for HTTP), and the channel
 * is opened to the address that was checked (no DNS rebinding).
 */
async function guardedTarget(
  raw: string,
  policy: EgressPolicy,
  resolve: ResolveAll,
): Promise<{ target: string; host: string; tls: boolean }> {
  const { host, port, tls } = parseEndpoint(raw);
  const url = checkUrl(`${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`, policy);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new EgressError('dns', `cannot resolve ${host}`);
    }
  }
  for (const a of addresses) {
    const range = refusal(a.address, url, policy);
    if (range) throw new EgressError('blocked', `${host} resolves to a ${range} address (blocked)`);
  }
  const first = addresses[0];
  if (!first) throw new EgressError('dns', `cannot resolve ${host}`);
  return { target: first.family === 6 ? `[${first.address}]:${port}` : `${first.address}:${port}`, host, tls };
}

/** A remote's credential and the host it belongs to (its `url`'s). */
export interface GrpcCredentialOwner {
  credential: Credential;
  host: string;
}

const bare = (host: string): string => host.replace(/^\[|\]$/g, '').toLowerCase();

/** The credential for an interface on `host`: the owner's when `host` is the owner's own, else none. */
export function credentialFor(host: string, owner: GrpcCredentialOwner | undefined): Credential | undefined {
  return owner && bare(host) === bare(owner.host) ? owner.credential : undefined;
}

type Call = (params: unknown, options?: RequestOptions) => unknown;
const STREAMS = new Set(['sendMessageStream', 'resubscribeTask']);

/**
 * The SDK's gRPC transport (v1.0, or v0.3 for an interface that says so) through the egress guard: the endpoint's
 * address checked and pinned, the remote's own credential added to each call's metadata (acting for the caller of
 * the current async context, like `egressFetch`), a TLS client certificate presented for an mTLS credential.
 */
export class EgressGrpcTransportFactory implements TransportFactory {
  /**
   * `owner`: the remote's credential and the host of its `url`; the credential goes only to an interface on that
   * host (any port: a gRPC service usually listens apart from the card), never to another host a card names.
   */
  constructor(
    private readonly policy: EgressPolicy,
    private readonly owner: GrpcCredentialOwner | undefined,
    private readonly timeoutMs: number,
    private readonly resolve: ResolveAll = resolveAll,
  ) {}

  get protocolName(): string {
    return 'GRPC';
  }

  async create(url: string, agentCard: AgentCard): Promise<Transport> {
    const { target, host, tls } = await guardedTarget(url, this.policy, this.resolve);
    const [grpc, { GrpcTransportFactory }] = await loadGrpc();
    const credential = credentialFor(host, this.owner);
    const identity = credential?.tls;
    const channel =
      tls || identity
        ? grpc.credentials.createSsl(
            identity?.ca ? Buffer.from(identity.ca) : null,
            identity ? Buffer.from(identity.key) : null,
            identity ? Buffer.from(identity.cert) : null,
            // The channel goes to the checked address; the certificate must still name the host.
            { checkServerIdentity: (_name, cert) => checkServerIdentity(host, cert) },
          )
        : grpc.credentials.createInsecure();
    // The card's interface is matched by url: present the pinned target as that interface's url.
    const pinned: AgentCard = {
      ...agentCard,
      supportedInterfaces: agentCard.supportedInterfaces.map((i) =>
        i.url === url && i.protocolBinding.toUpperCase() === 'GRPC' ? { ...i, url: target } : i,
      ),
    };
    const inner = await new GrpcTransportFactory({
      grpcChannelCredentials: channel,
      legacyCompat: { enabled: true },
    }).create(target, pinned);
    return this.withCredential(inner, credential);
  }

  /** Each call with the credential's headers as metadata, within the call timeout. */
  private withCredential(inner: Transport, credential: Credential | undefined): Transport {
    const timeoutMs = this.timeoutMs;
    const options = async (o: RequestOptions | undefined): Promise<RequestOptions> => {
      const headers = credential ? await credential.headers({ signal: o?.signal, subject: currentSubject() }) : {};
      const extra: Record<string, string> = {};
      for (const [k, v] of Object.entries(headers)) extra[k.toLowerCase()] = v;
      return { ...o, serviceParameters: { ...o?.serviceParameters, ...extra } };
    };
    return new Proxy(inner, {
      get(t, prop, receiver) {
        const value = Reflect.get(t, prop, receiver) as unknown;
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        const fn = (value as Call).bind(t);
        if (STREAMS.has(prop)) {
          return async function* (params: unknown, o?: RequestOptions) {
            yield* fn(params, await options(o)) as AsyncGenerator<unknown>;
          };
        }
        if (prop === 'protocolName' || prop === 'protocolVersion') return fn;
        return async (params: unknown, o?: RequestOptions) => {
          const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(o?.signal ? [o.signal] : [])]);
          return fn(params, { ...(await options(o)), signal });
        };
      },
    });
  }
}
