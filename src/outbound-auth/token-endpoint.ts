import { EgressError, egressRequest, type EgressPolicy } from '../common/net/egress.js';
import { parseJsonText } from '../common/json-guard.js';
import { OutboundAuthError, type OAuthClient } from './outbound-auth.types.js';

/** An access token and how long it lives. */
export interface IssuedToken {
  token: string;
  /** Seconds, as the endpoint said, or `DEFAULT_LIFETIME_S` when it said nothing. */
  expiresIn: number;
}

/** A token response without `expires_in` is taken to live this long (and no longer than `MAX_LIFETIME_S`). */
export const DEFAULT_LIFETIME_S = 300;
const MAX_LIFETIME_S = 86_400;
const MAX_ANSWER = 64 * 1024;

/** How the token endpoint is reached. */
export interface TokenEndpointOptions {
  policy: EgressPolicy;
  timeoutMs: number;
}

/**
 * One token request (RFC 6749 §4.4, RFC 8693 §2.1): a form POST through the egress guard, the client
 * authenticated by HTTP Basic or in the form, no redirects. The answer must be a JSON token response; anything
 * else (the endpoint down, slow, an HTML page, garbage, an OAuth error) is an `OutboundAuthError` that names the
 * endpoint's origin and what went wrong — never the client's secret, the tokens sent, or the answer's body.
 */
export async function requestToken(
  client: OAuthClient,
  params: Record<string, string>,
  opts: TokenEndpointOptions,
  signal?: AbortSignal,
): Promise<IssuedToken> {
  const form = new URLSearchParams(params);
  if (client.scopes.length > 0) form.set('scope', client.scopes.join(' '));
  if (client.audience) form.set('audience', client.audience);
  if (client.resource) form.set('resource', client.resource);
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (client.clientAuth === 'post') {
    form.set('client_id', client.clientId);
    form.set('client_secret', client.clientSecret);
  } else {
    // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
    const pair = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  }
  const where = `token endpoint ${originOf(client.tokenUrl)}`;
  let res;
  try {
    res = await egressRequest(client.tokenUrl, opts.policy, {
      method: 'POST',
      headers,
      body: form.toString(),
      timeoutMs: opts.timeoutMs,
      maxBytes: MAX_ANSWER,
      maxRedirects: 0,
      signal,
    });
  } catch (err) {
    if (err instanceof EgressError) {
      const why = err.code === 'too_many_redirects' ? 'it answered with a redirect (not followed)' : err.message;
      throw new OutboundAuthError('token_endpoint', `${where} failed: ${why}`);
    }
    throw err;
  }
  const body = parseObject(res.truncated ? '' : res.body.toString('utf8'));
  if (res.status !== 200) {
    // An OAuth error code (RFC 6749 §5.2) is a fixed vocabulary, safe to show; its description is not quoted.
    const code = typeof body?.error === 'string' && /^[\x20-\x7e]{1,64}$/.test(body.error) ? `: ${body.error}` : '';
    throw new OutboundAuthError('token_endpoint', `${where} answered HTTP ${res.status}${code}`);
  }
  if (!body) {
    const type = String(res.headers['content-type'] ?? 'no content type').split(';')[0];
    throw new OutboundAuthError('token_endpoint', `${where} answered something else than a token (${type}, not JSON)`);
  }
  const token = body.access_token;
  if (typeof token !== 'string' || !/^[\x21-\x7e]{1,16384}$/.test(token)) {
    throw new OutboundAuthError('token_endpoint', `${where} answered without a usable access_token`);
  }
  if (typeof body.token_type === 'string' && !/^(bearer|n_a)$/i.test(body.token_type)) {
    throw new OutboundAuthError('token_endpoint', `${where} issued a token of a type Arbiter cannot send`);
  }
  const e = body.expires_in;
  const seconds = typeof e === 'number' ? e : typeof e === 'string' && /^\d{1,9}$/.test(e) ? Number(e) : NaN;
  const expiresIn = Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, MAX_LIFETIME_S) : DEFAULT_LIFETIME_S;
  return { token, expiresIn };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = parseJsonText(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function formEncode(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, '+');
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
