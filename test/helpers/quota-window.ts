import { SEND_WINDOW_MS } from '../../src/quotas/quota.service.js';

/** The send quota's window (a clock-aligned minute) that `at` falls in. */
function windowOf(at: number): number {
  return Math.floor(at / SEND_WINDOW_MS);
}

/**
 * Send quotas count in fixed minutes aligned to the clock, so a test that
 * fills a budget and expects the next send refused must make all its sends
 * in one window. Rather than waiting for a fresh minute and hoping the sends
 * fit, this runs `attempt` and, if it fails and a window boundary fell
 * inside it, runs it again — once more at most, and each attempt with
 * whatever fresh state it makes for itself (a new tenant): a failure within
 * one window is a real failure. Only an attempt slower than a whole minute
 * can never pass.
 */
export async function inOneQuotaWindow(attempt: () => Promise<void>): Promise<void> {
  for (let tries = 1; ; tries++) {
    const first = windowOf(Date.now());
    try {
      await attempt();
      return;
    } catch (err) {
      if (tries >= 3 || windowOf(Date.now()) === first) throw err;
    }
  }
}
