import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Sql } from '../../database/sql.service.js';
import { TERMINAL_STATES } from '../../tasks/task-state.js';
import type { PushDialect } from '../../a2a-wire/push-config.js';

/** A config a replica holds the claim on, with what sending needs (secrets included: never log this). */
export interface ClaimedConfig {
  id: string;
  tenantId: string;
  taskId: string;
  /** The client's id of the config (its secrets are bound to it). */
  configId: string;
  contextId: string;
  dialect: PushDialect;
  url: string;
  /** As stored (`SecretBox.toStored`): sealed or marked plain. */
  token: string | null;
  authScheme: string | null;
  /** As stored, like `token`. */
  credentials: string | null;
  deliveredSeq: number;
  attempts: number;
}

/** How a failed attempt is recorded: the delay before the next one, and when to give up. */
export interface FailurePolicy {
  delayMs: number;
  maxAttempts: number;
  maxAgeMs: number;
}

/**
 * The delivery worker's SQL. A replica claims due configs with a lease
 * (`FOR UPDATE SKIP LOCKED` picks them, so replicas never wait on each
 * other), sends, and moves the cursor only while it still holds the claim.
 * A replica that dies keeps nothing: its claims expire and the cursor says
 * where the next one starts.
 */
@Injectable()
export class PushDeliveryRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly sql: Sql,
  ) {}

  /**
   * An UPDATE … RETURNING on the driver's pool (TypeORM's `query` answers
   * `[rows, count]` for an UPDATE), prepared once per connection by `name`.
   */
  private updated<T>(name: string, text: string, params: unknown[]): Promise<T[]> {
    return this.sql.query<T>({ name: `arbiter_push_${name}`, text }, params);
  }

  /** Up to `limit` active configs with undelivered events, due, and unclaimed (or whose claim expired). */
  async claim(owner: string, leaseMs: number, limit: number): Promise<ClaimedConfig[]> {
    return this.updated<ClaimedConfig>(
      'claim',
      `WITH due AS (
         SELECT c.id FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id
          WHERE c.state = 'active' AND c.next_attempt_at <= now() AND a.last_seq > c.delivered_seq
            AND (c.lease_expires_at IS NULL OR c.lease_expires_at < now())
          ORDER BY c.next_attempt_at LIMIT $3
          FOR UPDATE OF c SKIP LOCKED
       )
       UPDATE push_configs c SET lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2 / 1000.0)
         FROM due, a2a_tasks a WHERE c.id = due.id AND a.task_id = c.task_id
       RETURNING c.id, c.tenant_id AS "tenantId", c.task_id AS "taskId", c.config_id AS "configId",
                 a.context_id AS "contextId", c.dialect, c.url, c.token,
                 c.auth_scheme AS "authScheme", c.credentials, c.delivered_seq AS "deliveredSeq", c.attempts`,
      [owner, leaseMs, limit],
    );
  }

  /**
   * Moves the cursor to `seq` (counting a delivery when `delivered`), clears
   * the failure streak and renews the claim. False when the claim is no
   * longer this replica's (expired and taken, or the config was deleted).
   */
  async advance(id: string, owner: string, seq: number, delivered: boolean, leaseMs: number): Promise<boolean> {
    const rows = await this.updated<unknown>(
      'advance',
      `UPDATE push_configs SET delivered_seq = GREATEST(delivered_seq, $3),
              delivered_count = delivered_count + $4, attempts = 0, first_failed_at = NULL, last_error = NULL,
              last_attempt_at = CASE WHEN $4 > 0 THEN now() ELSE last_attempt_at END,
              last_delivered_at = CASE WHEN $4 > 0 THEN now() ELSE last_delivered_at END,
              lease_expires_at = now() + make_interval(secs => $5 / 1000.0), updated_at = now()
        WHERE id = $1 AND lease_owner = $2 AND state = 'active'
        RETURNING 1`,
      [id, owner, seq, delivered ? 1 : 0, leaseMs],
    );
    return rows.length > 0;
  }

  /** Renews the claim before a send; false when it is no longer this replica's. */
  async renew(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const rows = await this.updated<unknown>(
      'renew',
      `UPDATE push_configs SET lease_expires_at = now() + make_interval(secs => $3 / 1000.0)
        WHERE id = $1 AND lease_owner = $2 AND state = 'active' RETURNING 1`,
      [id, owner, leaseMs],
    );
    return rows.length > 0;
  }

  /**
   * Records a failed attempt and releases the claim: the next attempt after
   * `delayMs`, or dead-lettered once the streak reaches `maxAttempts` or has
   * lasted `maxAgeMs`. Returns whether it is now dead.
   */
  async fail(id: string, owner: string, error: string, policy: FailurePolicy): Promise<boolean> {
    const rows = await this.updated<{ state: string }>(
      'fail',
      `UPDATE push_configs SET attempts = attempts + 1, last_error = $3, last_attempt_at = now(),
              first_failed_at = COALESCE(first_failed_at, now()),
              state = CASE WHEN attempts + 1 >= $5
                             OR COALESCE(first_failed_at, now()) < now() - make_interval(secs => $6 / 1000.0)
                           THEN 'dead' ELSE 'active' END,
              next_attempt_at = now() + make_interval(secs => $4 / 1000.0),
              lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
        WHERE id = $1 AND lease_owner = $2
        RETURNING state`,
      [id, owner, error.slice(0, 500), policy.delayMs, policy.maxAttempts, policy.maxAgeMs],
    );
    return rows[0]?.state === 'dead';
  }

  /** Gives the claim back (nothing more to send now, or shutting down). */
  async release(id: string, owner: string): Promise<void> {
    await this.ds.query(
      `UPDATE push_configs SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2`,
      [id, owner],
    );
  }

  async releaseAll(owner: string): Promise<void> {
    await this.ds.query(`UPDATE push_configs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1`, [
      owner,
    ]);
  }

  /** Tasks whose writes should wake the worker: active configs on unfinished tasks, or behind on a finished one. */
  async watchedTasks(limit: number): Promise<string[]> {
    const rows = await this.ds.query<{ task_id: string }[]>(
      `SELECT DISTINCT c.task_id FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id
        WHERE c.state = 'active' AND (a.state <> ALL($2::text[]) OR a.last_seq > c.delivered_seq)
        LIMIT $1`,
      [limit, TERMINAL_STATES],
    );
    return rows.map((r) => r.task_id);
  }
}
