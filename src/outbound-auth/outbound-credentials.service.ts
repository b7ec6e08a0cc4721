import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { parseHostList, type EgressPolicy } from '../common/net/egress.js';
import { AppConfig } from '../config/app-config.js';
import { credentialOf, type Credential } from './credentials.js';
import { OutboundAuthError, type OAuthClient, type OutboundAuth } from './outbound-auth.types.js';
import { requestToken } from './token-endpoint.js';

/** Credentials kept (with their tokens); beyond this the oldest is dropped. */
const MAX_CREDENTIALS = 512;

/**
 * The credentials of remote A2A agents and MCP servers over HTTP, one per distinct `auth` (so two entries with the
 * same OAuth client share its token, and an edited entry gets a new one). Token endpoints are reached through the
 * egress guard: public `https` only, unless the host is in `ARBITER_TOKEN_ENDPOINT_ALLOWLIST` (a private or
 * loopback IdP, which may then be plain `http`).
 */
@Injectable()
export class OutboundCredentials {
  private readonly policy: EgressPolicy;
  private readonly credentials = new Map<string, Credential>();

  constructor(private readonly config: AppConfig) {
    this.policy = { allowPrivate: false, allowHosts: parseHostList(config.tokenEndpointAllowlist) };
  }

  /** The credential of `auth`, shared by every entry that names the same one. */
  credentialFor(auth: OutboundAuth): Credential {
    const key = fingerprintOf(auth);
    const known = this.credentials.get(key);
    if (known) return known;
    if (this.credentials.size >= MAX_CREDENTIALS)
      this.credentials.delete(this.credentials.keys().next().value as string);
    const credential = credentialOf(auth, (client, params) => this.fetchToken(client, params));
    this.credentials.set(key, credential);
    return credential;
  }

  private async fetchToken(client: OAuthClient, params: Record<string, string>) {
    const url = new URL(client.tokenUrl);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const listed = this.policy.allowHosts.has(host) || this.policy.allowHosts.has(`${host}:${url.port || '80'}`);
    if (url.protocol !== 'https:' && !listed) {
      throw new OutboundAuthError(
        'unusable',
        `token endpoint ${url.origin} must be https (or its host listed in ARBITER_TOKEN_ENDPOINT_ALLOWLIST)`,
      );
    }
    return requestToken(client, params, { policy: this.policy, timeoutMs: this.config.tokenEndpointTimeoutMs });
  }
}

/** Identifies an `auth` without keeping its secrets in the clear: a hash of all of it. */
export function fingerprintOf(auth: OutboundAuth): string {
  return createHash('sha256').update(JSON.stringify(auth)).digest('base64url');
}
