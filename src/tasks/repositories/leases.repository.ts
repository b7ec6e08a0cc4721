import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { NOTICE_CONNECTION_PREFIX } from '../../database/instance-identity.js';
import { leaseExpiry, RUNNING_SQL, TERMINAL_SQL } from '../statements/fragments.sql.js';

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
}
