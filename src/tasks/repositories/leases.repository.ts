import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { NOTICE_CONNECTION_PREFIX } from '../../database/instance-identity.js';
import { leaseExpiry, RUNNING_SQL, TERMINAL_SQL } from '../statements/fragments.sql.js';
import { FOLLOWED_SQL } from '../statements/end.sql.js';
import type { ArtifactJson } from '../../common/a2a-json.js';

/** A remote-backed task this replica took over (see `LeaseRepository.claimFollowed`). */
export interface ClaimedTask {
  taskId: string;
  tenantId: string;
  agentId: string;
  contextId: string;
  metadata: Record<string, unknown>;
  artifacts: ArtifactJson[];
  lastSeq: number;
  inputTokens: number;
  outputTokens: number;
}

/** Runs one statement and returns its rows. */
export type StatementRunner = <R extends Record<string, unknown>>(text: string, values: unknown[]) => Promise<R[]>;

/**
 * The leases runs hold on their tasks: renewals, and who let theirs run out
 * (see `LeaseService`). A lease is claimed and released by the task log's
 * own writes (`TaskLogWriter`).
 */
@Injectable()
export class LeaseRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * Extends the leases of the runs `owner` holds; returns the tasks renewed
   * (the others ended elsewhere, or are being written). `run` executes the
   * statement (the replica's own connection, see `LeaseService`); the pool
   * when absent.
   */
  async renewLeases(
    owner: string,
    taskIds: string[],
    ms: number,
    run: StatementRunner = (text, values) => this.ds.query(text, values),
  ): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await run<{ task_id: string }>(
      // SKIP LOCKED: a row being written right now is renewed next time, and the renewal never waits on a
      // group commit's locks (so the two cannot deadlock); the run gets a re-read of its log meanwhile.
      `UPDATE a2a_tasks SET lease_expires_at = ${leaseExpiry('$3')}
        WHERE task_id IN (
          SELECT task_id FROM a2a_tasks
           WHERE owner_instance = $1 AND task_id = ANY($2::varchar[]) AND lease_expires_at IS NOT NULL
             AND state NOT IN ${TERMINAL_SQL}
           FOR UPDATE SKIP LOCKED)
        RETURNING task_id`,
      [owner, taskIds, ms],
    );
    return rows.map((r) => r.task_id);
  }

  /**
   * The owners of running tasks whose lease has run out, other than `self`
   * (whose own are judged by the runs it holds), and the replicas whose
   * notice connections are open now — one statement, so both are seen at
   * the same moment.
   */
  async expiredOwners(self: string): Promise<{ expired: string[]; live: Set<string> }> {
    const [row] = await this.ds.query<{ expired: string[] | null; live: string[] | null }[]>(
      `SELECT
         (SELECT array_agg(DISTINCT owner_instance) FROM a2a_tasks
           WHERE state IN ${RUNNING_SQL} AND lease_expires_at < now() AND owner_instance <> $1) AS expired,
         (SELECT array_agg(substr(application_name, ${NOTICE_CONNECTION_PREFIX.length + 1})) FROM pg_stat_activity
           WHERE datname = current_database() AND starts_with(application_name, $2)) AS live`,
      [self, NOTICE_CONNECTION_PREFIX],
    );
    return { expired: row?.expired ?? [], live: new Set(row?.live ?? []) };
  }

  /** Of `taskIds`, those still running but leased to another replica now (taken over from `self`). */
  async takenOver(self: string, taskIds: string[]): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.ds.query<{ task_id: string }[]>(
      `SELECT task_id FROM a2a_tasks WHERE task_id = ANY($2::varchar[]) AND state IN ${RUNNING_SQL}
          AND owner_instance IS NOT NULL AND owner_instance <> $1`,
      [self, taskIds],
    );
    return rows.map((r) => r.task_id);
  }

  /**
   * Takes over up to `limit` running tasks that follow an upstream task (a remote-backed agent's, bound to it:
   * `x-arbiter.upstream_task_id` in their metadata) whose lease ran out and whose owner is `gone` — or, `restarted`
   * (the embedded database at start), that are not leased to `self`: each is leased to `self` in the same
   * statement, so exactly one replica takes it (rows another transaction holds are skipped). No event is written:
   * the run that resumes it appends what the upstream says next.
   */
  async claimFollowed(
    self: string,
    from: { gone: string[] } | { restarted: true },
    ms: number,
    limit: number,
  ): Promise<ClaimedTask[]> {
    const lost =
      'gone' in from
        ? `c.lease_expires_at < now() AND c.owner_instance = ANY($4::varchar[])`
        : `(c.owner_instance IS DISTINCT FROM $1 OR c.lease_expires_at < now())`;
    // An UPDATE's result through TypeORM is [rows, count].
    const result = await this.ds.query<[ClaimedTask[], number] | ClaimedTask[]>(
      `UPDATE a2a_tasks a SET owner_instance = $1, lease_expires_at = ${leaseExpiry('$2')}
         FROM (SELECT c.task_id FROM a2a_tasks c
                WHERE c.state IN ${RUNNING_SQL} AND ${FOLLOWED_SQL('c')} AND ${lost}
                ORDER BY c.task_id LIMIT $3 FOR UPDATE SKIP LOCKED) picked
        WHERE a.task_id = picked.task_id
        RETURNING a.task_id AS "taskId", a.tenant_id AS "tenantId", a.agent_id AS "agentId",
          a.context_id AS "contextId", a.metadata, a.artifacts, a.last_seq AS "lastSeq",
          a.input_tokens AS "inputTokens", a.output_tokens AS "outputTokens"`,
      'gone' in from ? [self, ms, limit, from.gone] : [self, ms, limit],
    );
    return (Array.isArray(result[0]) ? result[0] : result) as ClaimedTask[];
  }
}
