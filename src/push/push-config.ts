import type { PushConfigState } from './entities/push-config.entity.js';

/** The A2A version a config was created through: its payloads go out in that dialect. */
export type PushDialect = '1.0' | '0.3';

/** A push config as a client sends it (spec §4.3.1), already read by a dialect. */
export interface PushConfigInput {
  /** The client's id; absent → the server picks one. */
  id?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

/**
 * A stored config as reads return it: the secrets (`token`, credentials)
 * are never part of it — only whether they are set.
 */
export interface PushConfigView {
  id: string;
  taskId: string;
  url: string;
  dialect: PushDialect;
  tokenSet: boolean;
  authentication?: { scheme: string; credentialsSet: boolean };
}

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
