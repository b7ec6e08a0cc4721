import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { PushConfigState } from '../entities/push-config.entity.js';
import type { PushConfigInput, PushConfigView, PushDialect } from '../../a2a-wire/push-config.js';
import type { PushDeliveryView } from '../push-config.js';
import { SecretBox } from '../../secrets/secret-box.js';
import type { NewPushConfig } from '../../tasks/repositories/task-log.types.js';
import { PUSH_REPLACES } from '../../tasks/statements/fragments.sql.js';
import { pushSecretAad } from '../push-secrets.js';

interface ConfigRow {
  config_id: string;
  task_id: string;
  url: string;
  dialect: PushDialect;
  token_set: boolean;
  auth_scheme: string | null;
  credentials_set: boolean;
}

interface DeliveryRow extends ConfigRow {
  state: PushConfigState;
  delivered_seq: number;
  last_seq: number;
  delivered_count: number;
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_delivered_at: Date | null;
  last_error: string | null;
}

/** What reads select: never the token or the credentials themselves. */
const VIEW = `c.config_id, c.task_id, c.url, c.dialect, c.token IS NOT NULL AS token_set, c.auth_scheme,
  c.credentials IS NOT NULL AS credentials_set`;

/** The task of a config, as the tenant (and agent) sees it: another tenant's task does not exist. */
const TASK_OF = `a.task_id = $1 AND a.tenant_id = $2 AND ($3::varchar IS NULL OR a.agent_id = $3)`;

function toView(r: ConfigRow): PushConfigView {
  return {
    id: r.config_id,
    taskId: r.task_id,
    url: r.url,
    dialect: r.dialect,
    tokenSet: r.token_set,
    ...(r.auth_scheme ? { authentication: { scheme: r.auth_scheme, credentialsSet: r.credentials_set } } : {}),
  };
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * Push configs, tenant first on every method. Reads return views without
 * secrets; only the delivery worker (`PushDeliveryRepository`) reads them.
 */
@Injectable()
export class PushConfigRepository {
  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly box: SecretBox,
  ) {}

  /** Whether the tenant (and agent, when given) has this task. */
  async taskExists(tenantId: string, taskId: string, agentId?: string): Promise<boolean> {
    const rows = await this.ds.query<unknown[]>(`SELECT 1 FROM a2a_tasks a WHERE ${TASK_OF}`, [
      taskId,
      tenantId,
      agentId ?? null,
    ]);
    return rows.length > 0;
  }

  async count(tenantId: string, agentId: string | undefined, taskId: string): Promise<number> {
    // The tenant's task only: another tenant's task has no configs here (its count would tell it exists).
    const [r] = await this.ds.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id WHERE ${TASK_OF}`,
      [taskId, tenantId, agentId ?? null],
    );
    return r?.n ?? 0;
  }

  /**
   * A config as the statement that takes its message stores it (`NewTask.push`, `continueWith`): a row id, and
   * the token and credentials sealed for their place, as `upsert` seals them.
   */
  sealedConfig(
    tenantId: string,
    taskId: string,
    configId: string,
    input: PushConfigInput,
    dialect: PushDialect,
  ): NewPushConfig {
    return {
      id: randomUUID(),
      configId,
      dialect,
      url: input.url,
      token: this.sealed(tenantId, taskId, configId, input.token, 'token'),
      authScheme: input.authentication?.scheme ?? null,
      credentials: this.sealed(tenantId, taskId, configId, input.authentication?.credentials, 'credentials'),
    };
  }

  private sealed(
    tenantId: string,
    taskId: string,
    configId: string,
    value: string | undefined,
    field: 'token' | 'credentials',
  ): string | null {
    return value === undefined ? null : this.box.toStored(value, pushSecretAad(tenantId, taskId, configId, field));
  }

  /**
   * Creates the config, or replaces the one with the same id (which
   * revives a dead-lettered one: it resumes from its cursor). Its token and
   * credentials are stored sealed when a sealing key is set (`SecretBox`). A new
   * config's cursor is `fromSeq`, or the task's last event (only later
   * updates are pushed). Null when the task is not the tenant's.
   */
  async upsert(
    tenantId: string,
    agentId: string | undefined,
    taskId: string,
    configId: string,
    input: PushConfigInput,
    dialect: PushDialect,
    fromSeq?: number,
  ): Promise<PushConfigView | null> {
    const rows = await this.ds.query<ConfigRow[]>(
      `INSERT INTO push_configs AS c (id, tenant_id, task_id, config_id, dialect, url, token, auth_scheme, credentials,
                                      delivered_seq)
       SELECT $4, a.tenant_id, a.task_id, $5, $6, $7, $8, $9, $10, COALESCE($11::int, a.last_seq)
         FROM a2a_tasks a WHERE ${TASK_OF}
       ${PUSH_REPLACES}
       RETURNING ${VIEW}`,
      [
        taskId,
        tenantId,
        agentId ?? null,
        randomUUID(),
        configId,
        dialect,
        input.url,
        this.sealed(tenantId, taskId, configId, input.token, 'token'),
        input.authentication?.scheme ?? null,
        this.sealed(tenantId, taskId, configId, input.authentication?.credentials, 'credentials'),
        fromSeq ?? null,
      ],
    );
    return rows[0] ? toView(rows[0]) : null;
  }

  async get(tenantId: string, agentId: string | undefined, taskId: string, configId: string) {
    const rows = await this.ds.query<ConfigRow[]>(
      `SELECT ${VIEW} FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id
        WHERE ${TASK_OF} AND c.config_id = $4`,
      [taskId, tenantId, agentId ?? null, configId],
    );
    return rows[0] ? toView(rows[0]) : null;
  }

  /** The task's configs, oldest first. */
  async list(tenantId: string, agentId: string | undefined, taskId: string): Promise<PushConfigView[]> {
    const rows = await this.ds.query<ConfigRow[]>(
      `SELECT ${VIEW} FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id
        WHERE ${TASK_OF} ORDER BY c.created_at, c.config_id`,
      [taskId, tenantId, agentId ?? null],
    );
    return rows.map(toView);
  }

  /** Deletes the config if it is there; no further delivery starts once this commits. */
  async delete(tenantId: string, agentId: string | undefined, taskId: string, configId: string): Promise<void> {
    await this.ds.query(
      `DELETE FROM push_configs c USING a2a_tasks a
        WHERE a.task_id = c.task_id AND ${TASK_OF} AND c.config_id = $4`,
      [taskId, tenantId, agentId ?? null, configId],
    );
  }

  /** Each config's delivery state, for the native API. */
  async deliveries(tenantId: string, taskId: string): Promise<PushDeliveryView[]> {
    const rows = await this.ds.query<DeliveryRow[]>(
      `SELECT ${VIEW}, c.state, c.delivered_seq, a.last_seq, c.delivered_count, c.attempts,
              CASE WHEN c.state = 'active' AND a.last_seq > c.delivered_seq THEN c.next_attempt_at END AS next_attempt_at,
              c.last_attempt_at, c.last_delivered_at, c.last_error
         FROM push_configs c JOIN a2a_tasks a ON a.task_id = c.task_id
        WHERE ${TASK_OF} ORDER BY c.created_at, c.config_id`,
      [taskId, tenantId, null],
    );
    return rows.map((r) => ({
      ...toView(r),
      state: r.state,
      deliveredSeq: r.delivered_seq,
      lastSeq: r.last_seq,
      deliveredCount: r.delivered_count,
      attempts: r.attempts,
      nextAttemptAt: iso(r.next_attempt_at),
      lastAttemptAt: iso(r.last_attempt_at),
      lastDeliveredAt: iso(r.last_delivered_at),
      lastError: r.last_error,
    }));
  }
}
