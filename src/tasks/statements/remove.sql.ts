import { TERMINAL_SQL } from './fragments.sql.js';

/** A context's terminal tasks deleted (their events and files go with them); returns how many. $1 tenant, $2 agent, $3 context. */
export const DELETE_ENDED_IN_CONTEXT = `WITH gone AS (DELETE FROM a2a_tasks WHERE tenant_id = $1 AND agent_id = $2 AND context_id = $3
                       AND state IN ${TERMINAL_SQL} RETURNING 1)
       SELECT count(*)::int AS n FROM gone`;

/** Retention: up to $2 tasks that ended more than $1 days ago deleted, oldest first, with their events; returns how many. */
export const PURGE_ENDED = `WITH gone AS (
         DELETE FROM a2a_tasks WHERE task_id IN (
           SELECT task_id FROM a2a_tasks
            WHERE state IN ${TERMINAL_SQL} AND updated_at < now() - make_interval(days => $1::int)
            ORDER BY updated_at LIMIT $2)
         RETURNING task_id)
       SELECT count(*)::int AS n FROM gone`;
