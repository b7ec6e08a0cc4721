import { DurationEnv, HostListEnv, TextEnv } from './setting.decorators.js';

/** Identity providers whose JWT access tokens Arbiter accepts (see [Identity](identity.md)). */
export class IdentitySettings {
  /**
   * `host` or `host:port` entries of identity providers that may resolve to loopback or private addresses, and
   * whose issuer may be plain `http` (a local IdP, tests); every other issuer must be public `https`.
   */
  @HostListEnv('ARBITER_IDENTITY_ALLOWLIST') identityAllowlist = '';

  /**
   * A JSON file of trusted issuers (the `/v1/admin/issuers` body, as an array) added at start when not yet
   * declared; see [Identity](identity.md#trusted-issuers).
   * @default unset → issuers come from the admin API only
   */
  @TextEnv('ARBITER_TRUSTED_ISSUERS_FILE', { allowed: 'a file path' }) trustedIssuersFile?: string;

  /**
   * An issuer's signing keys are fetched again at most this often: on a token with an unknown `kid`, and in the
   * background so retired keys stop being accepted.
   */
  @DurationEnv('ARBITER_JWKS_REFRESH_MS', 1000, 86_400_000) jwksRefreshMs = 300_000;

  /** One request for an issuer's discovery document or keys. */
  @DurationEnv('ARBITER_JWKS_TIMEOUT_MS', 100, 60_000) jwksTimeoutMs = 5_000;
}
