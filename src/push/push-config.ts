import type { PushConfigView } from '../a2a-wire/push-config.js';
import type { PushConfigState } from './entities/push-config.entity.js';

// The wire shapes of a push config (what a client sends, what reads return) are A2A's: see a2a-wire/push-config.ts.

/** Where one config's delivery stands (the native API's view). */
export interface PushDeliveryView extends PushConfigView {
  state: PushConfigState;
  /** The last event of the task's log the webhook has (or did not need). */
  deliveredSeq: number;
  /** The task's last event. */
  lastSeq: number;
  deliveredCount: number;
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastDeliveredAt: string | null;
  lastError: string | null;
}

/** Most configs one task may have. */
export const MAX_CONFIGS_PER_TASK = 16;
