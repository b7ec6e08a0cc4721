const COUNTS = ['started', 'completed', 'failed', 'canceled', 'input_required'];
const HOUR = `date_trunc('hour', bucket, 'UTC')`;

/**
 * One flush of a replica's counts: $1 task counts, $2 latency slots, $3 A2A
 * errors, each a JSON array of minute rows (one per key); each is added to
 * its minute row and, summed, to its hour row. Rows in key order, so
 * replicas flushing together lock alike.
 */
export const FLUSH_STATS = `WITH
  t AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(tenant_id uuid, bucket timestamptz,
        ${COUNTS.map((c) => `${c} int`).join(', ')})),
  l AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS l(tenant_id uuid, bucket timestamptz, kind varchar, slot smallint,
        n int)),
  e AS (SELECT * FROM jsonb_to_recordset($3::jsonb) AS e(tenant_id uuid, bucket timestamptz, binding varchar,
        code varchar, n int)),
  ti AS (
    INSERT INTO stats_tasks AS r (tenant_id, grain, bucket, ${COUNTS.join(', ')})
    SELECT * FROM (
      SELECT tenant_id, 1::smallint AS grain, bucket, ${COUNTS.join(', ')} FROM t
      UNION ALL
      SELECT tenant_id, 60::smallint, ${HOUR}, ${COUNTS.map((c) => `sum(${c})`).join(', ')} FROM t
       GROUP BY tenant_id, ${HOUR}) s ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, grain, bucket) DO UPDATE SET ${COUNTS.map((c) => `${c} = r.${c} + excluded.${c}`).join(', ')}
  ),
  li AS (
    INSERT INTO stats_latency AS r (tenant_id, grain, bucket, kind, slot, n)
    SELECT * FROM (
      SELECT tenant_id, 1::smallint AS grain, bucket, kind, slot, n FROM l
      UNION ALL
      SELECT tenant_id, 60::smallint, ${HOUR}, kind, slot, sum(n) FROM l GROUP BY tenant_id, ${HOUR}, kind, slot
    ) s ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (tenant_id, grain, bucket, kind, slot) DO UPDATE SET n = r.n + excluded.n
  ),
  ei AS (
    INSERT INTO stats_a2a_errors AS r (tenant_id, grain, bucket, binding, code, n)
    SELECT * FROM (
      SELECT tenant_id, 1::smallint AS grain, bucket, binding, code, n FROM e
      UNION ALL
      SELECT tenant_id, 60::smallint, ${HOUR}, binding, code, sum(n) FROM e GROUP BY tenant_id, ${HOUR}, binding, code
    ) s ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (tenant_id, grain, bucket, binding, code) DO UPDATE SET n = r.n + excluded.n
  )
SELECT 1`;

/** Minute rows are read for windows up to a day, hour rows up to 30 days: older ones are deleted. */
export const PRUNE_STATS = ['stats_tasks', 'stats_latency', 'stats_a2a_errors'].map(
  (table) => `DELETE FROM ${table} WHERE (grain = 1 AND bucket < now() - interval '8 days')
                OR (grain = 60 AND bucket < now() - interval '40 days')`,
);
