import { DurationEnv, HostListEnv, IntEnv } from './setting.decorators.js';

/** Push notifications: webhook delivery, retries and the dead-letter. */
export class PushSettings {
  /**
   * `host` / `host:port` entries a push webhook may target although they resolve to private or loopback addresses.
   */
  @HostListEnv('ARBITER_PUSH_ALLOWLIST') pushAllowlist = '';

  /** One webhook POST, connect to answer (spec §4.3.3 recommends 10–30 s). */
  @DurationEnv('ARBITER_PUSH_TIMEOUT_MS', 100, 120_000) pushTimeoutMs = 10_000;

  /** Webhook failures in a row before the dead-letter. */
  @IntEnv('ARBITER_PUSH_MAX_ATTEMPTS', 1, 1000) pushMaxAttempts = 12;

  /** How long a webhook's failure streak may last before the dead-letter. */
  @DurationEnv('ARBITER_PUSH_MAX_AGE_MS', 1000, 604_800_000) pushMaxAgeMs = 86_400_000;

  /** First retry delay (doubles, with jitter, up to `ARBITER_PUSH_BACKOFF_MAX_MS`). */
  @DurationEnv('ARBITER_PUSH_BACKOFF_BASE_MS', 10, 3_600_000) pushBackoffBaseMs = 1_000;

  /** Longest retry delay. */
  @DurationEnv('ARBITER_PUSH_BACKOFF_MAX_MS', 10, 86_400_000) pushBackoffMaxMs = 300_000;

  /** Each replica's scan for due deliveries (writes wake it at once besides). */
  @DurationEnv('ARBITER_PUSH_POLL_MS', 50, 600_000) pushPollMs = 2_000;

  /**
   * A replica's claim on a webhook (a killed replica's claim expires); must exceed `ARBITER_PUSH_TIMEOUT_MS`
   * (checked at start).
   */
  @DurationEnv('ARBITER_PUSH_LEASE_MS', 500, 600_000) pushLeaseMs = 30_000;
}
