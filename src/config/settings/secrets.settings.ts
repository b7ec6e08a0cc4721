import { DurationEnv, HostListEnv, PatternEnv, TextEnv } from './setting.decorators.js';

/** Credentials Arbiter keeps to use again (webhook tokens, remote agents' secrets): sealed with AES-256-GCM. */
export class SecretsSettings {
  /**
   * The key that seals stored credentials: 32 random bytes in base64 (`openssl rand -base64 32`). Unset: push
   * webhook credentials are stored as they come, and inline credentials that need sealing are refused. See
   * [Secrets at rest](operating.md#secrets-at-rest).
   * @default unset → no sealing
   */
  @PatternEnv('ARBITER_SECRETS_KEY', /^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes in base64 (44 characters)', {
    secret: true,
    allowed: '32 bytes in base64 (44 characters)',
  })
  secretsKey?: string;

  /** A file holding the sealing key (base64, as `ARBITER_SECRETS_KEY`; a container secret); not together with it. */
  @TextEnv('ARBITER_SECRETS_KEY_FILE', { allowed: 'a file path' }) secretsKeyFile?: string;

  /**
   * A file of earlier sealing keys, one base64 key a line (`#` comments): still opened, never used to seal, until
   * `npm run secrets:rotate` has sealed everything under the current key.
   */
  @TextEnv('ARBITER_SECRETS_PREVIOUS_KEYS_FILE', { allowed: 'a file path' }) secretsPreviousKeysFile?: string;

  /**
   * `host` or `host:port` entries of OAuth token endpoints (of remote agents' and MCP servers' credentials) that
   * may resolve to loopback or private addresses, and may be plain `http`; every other one must be public `https`.
   */
  @HostListEnv('ARBITER_TOKEN_ENDPOINT_ALLOWLIST') tokenEndpointAllowlist = '';

  /** One request to an OAuth token endpoint (client credentials, token exchange). */
  @DurationEnv('ARBITER_TOKEN_ENDPOINT_TIMEOUT_MS', 100, 120_000) tokenEndpointTimeoutMs = 10_000;
}
