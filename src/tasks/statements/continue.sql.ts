import {
  EVENT_COLUMNS,
  FILE_RECORD,
  INTERRUPTED_SQL,
  leaseExpiry,
  PUSH_REPLACES,
  pushInsert,
  TERMINAL_SQL,
} from './fragments.sql.js';
import { notifyWrites } from './notify.sql.js';
import { requestsCte } from './usage.sql.js';

const resumes = `state IN ${INTERRUPTED_SQL}`;

/**
 * A user message added to a task that is not terminal, in one statement:
 * the `message` event, and for an interrupted task also `working`, the
 * lease to the caller and the status message cleared. An interrupted task
 * resumes only under its tenant's running-task cap ($11, 0: none; its count
 * locked as in CREATE). Returns the events written, each with the row's
 * `history` (this message included), `artifacts` and tokens as `row`,
 * read under the row lock; no rows when nothing was written. The message is
 * counted as taken (`usage_requests`) when a request budget applies ($12). One notice on commit. $1 task, $2 tenant, $3 the message as a one-element array, $4
 * the status timestamp, $5 the `working` payload, $6/$7 the lease, $8 this
 * replica's id, $9 the message, $10 its stored files, $11 the cap, $13 the
 * push config the message carries (`NewPushConfig` as `pushRow` writes it, or
 * null): created, or the task's config of that id replaced (a dead one
 * revived), with its cursor before this message.
 */
export const CONTINUE = `WITH locked AS (SELECT running FROM tenant_running WHERE tenant_id = $2 AND $11::int > 0 FOR UPDATE),
       t AS (
         UPDATE a2a_tasks SET
           last_seq = last_seq + CASE WHEN ${resumes} THEN 2 ELSE 1 END,
           last_input_seq = last_seq + 1,
           state = CASE WHEN ${resumes} THEN 'TASK_STATE_WORKING' ELSE state END,
           updated_at = CASE WHEN ${resumes} THEN $4::timestamptz ELSE updated_at END,
           status_message = CASE WHEN ${resumes} THEN NULL ELSE status_message END,
           history = history || $3::jsonb,
           history_bytes = history_bytes + octet_length($3::jsonb::text),
           owner_instance = CASE WHEN ${resumes} THEN $6::varchar ELSE owner_instance END,
           lease_expires_at = CASE WHEN ${resumes} THEN ${leaseExpiry('$7')} ELSE lease_expires_at END
         WHERE task_id = $1 AND tenant_id = $2 AND state NOT IN ${TERMINAL_SQL}
           AND NOT (${resumes} AND $11::int > 0 AND COALESCE((SELECT running FROM locked), 0) >= $11::int)
         RETURNING agent_id, last_seq, last_input_seq, history, artifacts, input_tokens, output_tokens
       )${requestsCte('SELECT $2::uuid AS tenant_id, t.agent_id FROM t WHERE $12::boolean')}, n AS (SELECT ${notifyWrites('$8', `$1 || '|' || t.last_seq`)} AS sent FROM t),
       f AS (
         INSERT INTO task_files (id, tenant_id, task_id, media_type, filename, size, bytes)
         SELECT ff.id, $2::uuid, $1, ff.media_type, ff.filename, ff.size, decode(ff.b64, 'base64')
           FROM t, jsonb_to_recordset($10::jsonb) AS ${FILE_RECORD}
       ), pc AS (
         ${pushInsert('p.v', '$1', '$2::uuid', 't.last_input_seq - 1', 't, (SELECT $13::jsonb AS v) p')}
         ${PUSH_REPLACES}
       )
       INSERT INTO task_events (task_id, seq, kind, payload)
       SELECT $1, t.last_input_seq, 'message', jsonb_build_object('message', $9::jsonb) FROM t, n
       UNION ALL
       SELECT $1, t.last_seq, 'status', $5::jsonb FROM t, n WHERE t.last_seq > t.last_input_seq
       RETURNING ${EVENT_COLUMNS},
         (SELECT jsonb_build_object('history', t.history, 'artifacts', t.artifacts,
                                    'inputTokens', t.input_tokens, 'outputTokens', t.output_tokens) FROM t) AS row`;
