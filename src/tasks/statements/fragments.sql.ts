import { isoOf } from '../../common/iso-time.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import { INTERRUPTED_STATES, RUNNING_STATES, TERMINAL_STATES } from '../task-state.js';
import type { NewTaskFile } from '../task-files.js';

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
