import { BoolEnv, DurationEnv, TextEnv } from './setting.decorators.js';

/** Remote A2A agents that `/a2a` calls. */
export class RemoteAgentSettings {
  /**
   * The remote A2A agent registry.
   * @default `ARBITER_HOME/a2a_agents.json`
   */
  @TextEnv('ARBITER_A2A_AGENTS_FILE', { allowed: 'a file path' }) a2aAgentsFile?: string;

  /**
   * Let `/a2a` reach loopback, private, unique-local and CGNAT addresses (in-cluster remotes); link-local and
   * multicast stay blocked.
   */
  @BoolEnv('ARBITER_A2A_ALLOW_PRIVATE') a2aAllowPrivate = false;

  /** How long a remote card is reused when the remote sends no `Cache-Control`. */
  @DurationEnv('ARBITER_A2A_CARD_TTL_MS', 0, 86_400_000) a2aCardTtlMs = 300_000;

  /** An `/a2a call` from send to the remote task's end. */
  @DurationEnv('ARBITER_A2A_TIMEOUT_MS', 1000, 3_600_000) a2aTimeoutMs = 120_000;

  /** One card fetch. */
  @DurationEnv('ARBITER_A2A_CARD_TIMEOUT_MS', 100, 120_000) a2aCardTimeoutMs = 10_000;
}
