import { V03, V1 } from '../../a2a-wire/dialects/dialects.js';
import type { StoredTaskEvent } from '../../tasks/task-events.js';
import { isSettled } from '../../tasks/task-state.js';
import type { PushDialect } from '../../a2a-wire/push-config.js';

/*
 * The dialects' stream rendering is a pure projection of log events, the one
 * place A2A wire shapes are made: a webhook gets exactly what a stream gets.
 */
const DIALECTS = { '1.0': V1, '0.3': V03 } as const;

/** The spec's token header (v0.3 §9.5; the official SDK's sender uses the same name). */
export const TOKEN_HEADER = 'X-A2A-Notification-Token';
/** Stable per (config, event): a receiver de-duplicates redeliveries by it. */
export const DELIVERY_ID_HEADER = 'X-Arbiter-Delivery-Id';

/**
 * The webhook body of one log event (spec §4.3.3): a v1.0 `StreamResponse`
 * (`statusUpdate` / `artifactUpdate`) or v0.3's `status-update` /
 * `artifact-update`; undefined for events the spec does not push (user
 * messages, token counts, sub-agent text).
 */
export function pushPayload(
  dialect: PushDialect,
  event: StoredTaskEvent,
  task: { id: string; contextId: string },
): unknown {
  if (event.kind !== 'status' && event.kind !== 'artifact') return undefined;
  // v0.3 marks the event that ends the turn `final`, as message/stream does.
  const final = event.kind === 'status' && isSettled(event.payload.state);
  return DIALECTS[dialect].streamItem({ type: 'event', event, final }, task);
}

/** The headers of one delivery. Credentials go in headers only (never in logs or stored errors). */
export function pushHeaders(
  config: {
    id: string;
    dialect: PushDialect;
    token: string | null;
    authScheme: string | null;
    credentials: string | null;
  },
  seq: number,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': config.dialect === '1.0' ? 'application/a2a+json' : 'application/json',
    [DELIVERY_ID_HEADER.toLowerCase()]: `${config.id}:${seq}`,
  };
  if (config.authScheme) {
    headers.authorization = config.credentials ? `${config.authScheme} ${config.credentials}` : config.authScheme;
  }
  if (config.token) headers[TOKEN_HEADER.toLowerCase()] = config.token;
  return headers;
}

/**
 * The delay before retry number `failures` (1 = after the first failure):
 * exponential from `baseMs`, capped at `maxMs`, with "equal jitter" (half
 * fixed, half random) so that webhooks failing together do not retry together.
 */
export function backoffMs(failures: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(exp / 2 + random() * (exp / 2));
}
