import { BytesEnv, DurationEnv, HostListEnv } from './setting.decorators.js';

/** The `/write` and `/fetch` tools. */
export class ToolSettings {
  /** Largest file one `/write` may produce. */
  @BytesEnv('ARBITER_MAX_WRITE_BYTES', 1, 10 * 1024 * 1024) maxWriteBytes = 256 * 1024;

  /** `/fetch` timeout (connection, redirects and body). */
  @DurationEnv('ARBITER_FETCH_TIMEOUT_MS', 100, 120_000) fetchTimeoutMs = 30_000;

  /**
   * `host` or `host:port` entries `/fetch` may reach even though they resolve to private or loopback addresses
   * (tests, in-cluster services); everything else private stays blocked.
   */
  @HostListEnv('ARBITER_FETCH_ALLOWLIST') fetchAllowlist = '';
}
