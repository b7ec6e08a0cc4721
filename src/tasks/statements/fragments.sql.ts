import { isoOf } from '../../common/iso-time.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import { INTERRUPTED_STATES, RUNNING_STATES, TERMINAL_STATES } from '../task-state.js';
import type { NewTaskFile } from '../task-files.js';
import type { NewPushConfig } from '../repositories/task-log.types.js';

/** A list of states as an SQL literal list, for `state IN …`. */
const sqlList = (states: readonly string[]): string => `(${states.map((s) => `'${s}'`).join(', ')})`;
/** States in which a task is waiting for input (no run holds it). */
export const INTERRUPTED_SQL = sqlList(INTERRUPTED_STATES);
export const TERMINAL_SQL = sqlList(TERMINAL_STATES);
/** States a run holds (its lease is renewed, and the sweep judges it). */
export const RUNNING_SQL = sqlList(RUNNING_STATES);

/** `now() + ms` in SQL, for lease expiry (database time, so replicas' clocks do not matter). */
export const leaseExpiry = (ms: string): string => `now() + make_interval(secs => ${ms}::int / 1000.0)`;

/** A `task_events` row as the statements return it (`EVENT_COLUMNS`). */
export interface EventRow {
  task_id: string;
  seq: number;
  kind: string;
  payload: unknown;
  created_at: Date;
}

export const EVENT_COLUMNS = 'task_id, seq, kind, payload, created_at';

export function toStoredEvent(r: EventRow): StoredTaskEvent {
  return {
    taskId: r.task_id,
    seq: r.seq,
    kind: r.kind,
    payload: r.payload,
    createdAt: isoOf(r.created_at),
  } as StoredTaskEvent;
}

export const toStoredEvents = (rows: EventRow[]): StoredTaskEvent[] =>
  rows.map(toStoredEvent).sort((a, b) => a.seq - b.seq);

/** The timestamp of the last status event in a batch (the row's status timestamp), if any. */
export function statusTimestamp(events: TaskEventBody[]): string | null {
  let at: string | null = null;
  for (const e of events) if (e.kind === 'status') at = e.payload.timestamp;
  return at;
}

/** A file as the statements' `jsonb_to_recordset` reads it (bytes as base64, decoded by SQL's `decode`). */
export function fileRow(f: NewTaskFile): Record<string, unknown> {
  return { id: f.id, media_type: f.mediaType, filename: f.filename, size: f.size, b64: f.b64 };
}

/** The columns of `task_files` a write inserts, from a `jsonb_to_recordset` of `fileRow`s. */
export const FILE_RECORD = 'ff(id uuid, media_type varchar, filename varchar, size int, b64 text)';

/** A push config as the statements read it (`x.push` of a creation, CONTINUE's $13); a secret left out is NULL. */
export function pushRow(p: NewPushConfig): Record<string, string> {
  const row: Record<string, string> = { id: p.id, config_id: p.configId, dialect: p.dialect, url: p.url };
  if (p.token !== null) row.token = p.token;
  if (p.authScheme !== null) row.auth_scheme = p.authScheme;
  if (p.credentials !== null) row.credentials = p.credentials;
  return row;
}

/**
 * What a push config given again under its id changes (`INSERT INTO push_configs AS c … ON CONFLICT`): its
 * target and secrets, and a dead-lettered one is revived — it resumes from its cursor, which stays.
 */
export const PUSH_REPLACES = `ON CONFLICT (task_id, config_id) DO UPDATE SET
           dialect = EXCLUDED.dialect, url = EXCLUDED.url, token = EXCLUDED.token, auth_scheme = EXCLUDED.auth_scheme,
           credentials = EXCLUDED.credentials, state = 'active', attempts = 0, next_attempt_at = now(),
           first_failed_at = NULL, last_error = NULL, updated_at = now()`;

/**
 * The insert of a push config a message carries: `push`, a `pushRow` as jsonb, read from `from` (which also names
 * the task's id and tenant as `taskId` and `tenantId`), its cursor at `cursor`; nothing when `push` is null.
 */
export const pushInsert = (push: string, taskId: string, tenantId: string, cursor: string, from: string): string =>
  `INSERT INTO push_configs AS c (id, tenant_id, task_id, config_id, dialect, url, token, auth_scheme, credentials,
                                  delivered_seq)
   SELECT (${push}->>'id')::uuid, ${tenantId}, ${taskId}, ${push}->>'config_id', ${push}->>'dialect', ${push}->>'url',
          ${push}->>'token', ${push}->>'auth_scheme', ${push}->>'credentials', ${cursor}
     FROM ${from} WHERE ${push} IS NOT NULL`;
