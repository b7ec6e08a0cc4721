import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { blockedRange, OPENABLE } from './address-ranges.js';
import { egressAgent } from './egress-agents.js';
import { childSpan, fail, injectTraceHeaders, SpanKind, tracing } from '../../tracing/spans.js';
import { forAnotherOrigin } from './redirect-headers.js';

/**
 * Outbound HTTP that cannot be pointed at the inside of the network (SSRF):
 * only http and https; every address a name resolves to must be a public
 * unicast address (no loopback, private, link-local — cloud metadata lives
 * there — CGNAT, multicast, reserved; an IPv6 address carrying an IPv4
 * one is judged by the IPv4 one); the connection is made to the
 * address that was checked, so DNS rebinding cannot switch it; and each
 * redirect is checked again.
 */
export interface EgressPolicy {
  /** Allow private, loopback, unique-local and CGNAT addresses (in-cluster deployments); never link-local or multicast. */
  allowPrivate: boolean;
  /** `host` or `host:port` entries allowed to resolve to private or loopback addresses. */
  allowHosts: ReadonlySet<string>;
}

export class EgressError extends Error {
  constructor(
    readonly code: 'blocked' | 'bad_url' | 'dns' | 'transport' | 'timeout' | 'too_many_redirects' | 'cancelled',
    message: string,
  ) {
    super(message);
    this.name = 'EgressError';
  }
}

/** Is the URL's `host` or `host:port` in the policy's allow list (the operator's allowlist settings)? */
export function hostListed(url: URL, policy: EgressPolicy): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return policy.allowHosts.has(host) || policy.allowHosts.has(`${host}:${port}`);
}

/**
 * Why `address` may not be reached for `url` under `policy`, or null. Link-local
 * (cloud metadata), multicast and reserved addresses are never reachable.
 */
export function refusal(address: string, url: URL, policy: EgressPolicy): string | null {
  const range = blockedRange(address);
  if (range === null) return null;
  if (OPENABLE.has(range) && (policy.allowPrivate || hostListed(url, policy))) return null;
  return range;
}

/** A `lookup` for http.request that refuses names resolving to blocked addresses and pins the checked one. */
function guardedLookup(url: URL, policy: EgressPolicy): LookupFunction {
  return ((hostname: string, options: object, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(new EgressError('dns', `cannot resolve ${hostname}`));
      for (const a of addresses) {
        const range = refusal(a.address, url, policy);
        if (range)
          return callback(new EgressError('blocked', `${url.hostname} resolves to a ${range} address (blocked)`));
      }
      const first = addresses[0];
      if (!first) return callback(new EgressError('dns', `cannot resolve ${hostname}`));
      if ((options as { all?: boolean }).all) return callback(null, [first]);
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}

/** Checks a URL before connecting: scheme, and literal addresses (which skip DNS). */
export function checkUrl(raw: string | URL, policy: EgressPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EgressError('bad_url', 'not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EgressError('bad_url', `scheme ${url.protocol.replace(':', '')} is not allowed (http and https only)`);
  }
  if (url.username || url.password) throw new EgressError('bad_url', 'credentials in the URL are not allowed');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const range = refusal(host, url, policy);
    if (range) throw new EgressError('blocked', `${host} is a ${range} address (blocked)`);
  }
  return url;
}

export interface EgressResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body was longer than `maxBytes` and was cut. */
  truncated: boolean;
  url: URL;
}

export interface EgressRequest {
  method?: 'GET' | 'POST' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects?: number;
  /** A TLS client certificate (mTLS), and the CA of the server's certificate when not a public one; https only, never to a redirect's other origin. */
  tls?: { cert: string; key: string; ca?: string };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** One guarded request, following redirects (each one checked). */
export async function egressRequest(
  raw: string | URL,
  policy: EgressPolicy,
  req: EgressRequest,
): Promise<EgressResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  const { res, url } = await follow(raw, policy, req, signal, timeout);
  return await readBody(res, url, req.maxBytes, signal, req.signal, timeout);
}

export interface EgressStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as it arrives; it ends (with an error) when the caller's signal aborts. */
  body: IncomingMessage;
  url: URL;
}

/**
 * One guarded request whose body is handed over as a stream (server-sent
 * events, long responses): `timeoutMs` bounds the wait for the response
 * head only; the caller's signal ends the body. The same checks as
 * `egressRequest` (scheme, addresses, pinned lookup, each redirect).
 */
export async function egressOpen(
  raw: string | URL,
  policy: EgressPolicy,
  req: Omit<EgressRequest, 'maxBytes'>,
): Promise<EgressStream> {
  // The head's timeout: a plain timer, not `AbortSignal.timeout` (a weak reference and a finalizer per call).
  const head = new AbortController();
  const timer = setTimeout(() => head.abort(new DOMException('timed out', 'TimeoutError')), req.timeoutMs).unref();
  const signal = req.signal ? AbortSignal.any([req.signal, head.signal]) : head.signal;
  try {
    const { res, url } = await follow(raw, policy, req, signal, head.signal);
    return { status: res.statusCode ?? 0, headers: res.headers, body: res, url };
  } finally {
    clearTimeout(timer);
  }
}

/** Sends `req`, following redirects (each one checked); returns the final response, body unread. */
async function follow(
  raw: string | URL,
  policy: EgressPolicy,
  req: Omit<EgressRequest, 'maxBytes'>,
  signal: AbortSignal,
  timeout: AbortSignal,
): Promise<{ res: IncomingMessage; url: URL }> {
  let url = checkUrl(raw, policy);
  let method = req.method ?? 'GET';
  let body = req.body;
  let headers = req.headers ?? {};
  let tls = req.tls;
  for (let hop = 0; ; hop++) {
    let res: IncomingMessage;
    try {
      res = await send(url, policy, { ...req, method, body, headers, tls }, signal);
    } catch (err) {
      if (err instanceof EgressError) throw err;
      if (req.signal?.aborted) throw new EgressError('cancelled', 'cancelled');
      if (timeout.aborted) throw new EgressError('timeout', `no answer within ${Math.round(req.timeoutMs / 1000)} s`);
      throw new EgressError('transport', (err as NodeJS.ErrnoException).code ?? 'connection failed');
    }
    const location = res.headers.location;
    if (REDIRECTS.has(res.statusCode ?? 0) && location) {
      res.resume();
      if (hop >= (req.maxRedirects ?? 5)) throw new EgressError('too_many_redirects', 'too many redirects');
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new EgressError('bad_url', 'the redirect location is not a valid URL');
      }
      // Credentials, and whatever else was meant for this origin alone, never follow a redirect to another.
      if (next.origin !== url.origin) {
        headers = forAnotherOrigin(headers);
        tls = undefined;
      }
      url = checkUrl(next, policy);
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    return { res, url };
  }
}

/**
 * One HTTP request. Inside a trace (a run's tool call, a remote agent's
 * call) it gets a client span until the response head, and carries W3C
 * `traceparent` so the remote side continues the trace. The span names the
 * origin and path only: a query string may hold a secret.
 */
async function send(
  url: URL,
  policy: EgressPolicy,
  req: Omit<EgressRequest, 'maxBytes'>,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const method = req.method ?? 'GET';
  if (!tracing()) return sendNow(url, policy, req, signal, {});
  const { span, within } = childSpan(method, SpanKind.CLIENT, {
    'http.request.method': method,
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    'url.full': `${url.origin}${url.pathname}`,
  });
  const trace: Record<string, string> = {};
  within(() => injectTraceHeaders(trace));
  try {
    const res = await sendNow(url, policy, req, signal, trace);
    span.setAttribute('http.response.status_code', res.statusCode ?? 0);
    if ((res.statusCode ?? 0) >= 500) fail(span, undefined, `HTTP ${res.statusCode}`);
    return res;
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Methods a request may be sent again for (RFC 9110 §9.2.2), when its kept-alive connection was found closed. */
const IDEMPOTENT = new Set(['GET', 'DELETE']);
/** What a request sent on a connection the server had closed while it sat idle fails with. */
const STALE = new Set(['ECONNRESET', 'EPIPE']);

function sendNow(
  url: URL,
  policy: EgressPolicy,
  req: Omit<EgressRequest, 'maxBytes'>,
  signal: AbortSignal,
  trace: Record<string, string>,
  again = true,
): Promise<IncomingMessage> {
  const make = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const method = req.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const r = make(url, {
      method,
      headers: { 'user-agent': 'arbiter', ...req.headers, ...trace },
      signal,
      // Checked when a connection is made (a pooled one was checked when it was made, under an equal policy).
      lookup: guardedLookup(url, policy),
      agent: egressAgent(url.protocol === 'https:' ? 'https:' : 'http:', policy),
      ...(url.protocol === 'https:' && req.tls ? req.tls : {}),
    });
    r.once('response', resolve);
    r.once('error', (err: NodeJS.ErrnoException & { cause?: unknown }) => {
      // A pooled connection the server closed (idle, or going down) before this request reached it: an idempotent
      // request is sent once more, on a new connection (which then meets the server as it is now).
      if (again && r.reusedSocket && !signal.aborted && IDEMPOTENT.has(method) && STALE.has(err.code ?? '')) {
        resolve(sendNow(url, policy, req, signal, trace, false));
        return;
      }
      reject(err.cause instanceof EgressError ? err.cause : err);
    });
    r.end(req.body);
  });
}

async function readBody(
  res: IncomingMessage,
  url: URL,
  maxBytes: number,
  signal: AbortSignal,
  caller: AbortSignal | undefined,
  timeout: AbortSignal,
): Promise<EgressResponse> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of res) {
      const b = chunk as Buffer;
      if (size + b.length > maxBytes) {
        chunks.push(b.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        res.destroy();
        break;
      }
      chunks.push(b);
      size += b.length;
    }
  } catch (err) {
    if (caller?.aborted) throw new EgressError('cancelled', 'cancelled');
    if (timeout.aborted || signal.aborted) throw new EgressError('timeout', 'the response did not finish in time');
    throw new EgressError('transport', (err as NodeJS.ErrnoException).code ?? 'connection lost');
  }
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated, url };
}

/** Parses `ARBITER_*_ALLOWLIST`-style values: comma-separated `host` or `host:port`. */
export function parseHostList(value: string | undefined): Set<string> {
  return new Set(
    (value ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
}
