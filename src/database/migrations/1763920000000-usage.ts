import type { MigrationInterface, QueryRunner } from 'typeorm';

const ROLLUP_COLUMNS = `"tenant_id" uuid NOT NULL, "bucket" timestamptz NOT NULL, "agent_id" varchar(64) NOT NULL,
  "provider" varchar(32) NOT NULL, "model" varchar(128) NOT NULL, "calls" bigint NOT NULL DEFAULT '0',
  "input_tokens" bigint NOT NULL DEFAULT '0', "output_tokens" bigint NOT NULL DEFAULT '0',
  "cached_tokens" bigint NOT NULL DEFAULT '0', "cost" numeric(24,12) NOT NULL DEFAULT '0',
  "unpriced_calls" bigint NOT NULL DEFAULT '0'`;

/**
 * Usage accounting: the ledger of model calls (tokens and cost, per tenant,
 * agent, task, provider and model) and its hourly and daily rollups, which
 * the statement that writes a call's event keeps too (see `usage.sql.ts`).
 */
export class Usage1763920000000 implements MigrationInterface {
  name = 'Usage1763920000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "usage_ledger" (
        "id" BIGSERIAL NOT NULL,
        "tenant_id" uuid NOT NULL,
        "task_id" varchar(64) NOT NULL,
        "agent_id" varchar(64) NOT NULL,
        "provider" varchar(32) NOT NULL,
        "model" varchar(128) NOT NULL,
        "input_tokens" bigint NOT NULL DEFAULT '0',
        "output_tokens" bigint NOT NULL DEFAULT '0',
        "cached_tokens" bigint NOT NULL DEFAULT '0',
        "cost" numeric(24,12),
        "currency" varchar(3),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_6fc3c8ac6eced66d0a08665aa4f" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "idx_usage_ledger_task" ON "usage_ledger" ("task_id")`);
    await q.query(`CREATE INDEX "idx_usage_ledger_tenant_at" ON "usage_ledger" ("tenant_id", "created_at")`);
    await q.query(`CREATE TABLE "usage_hourly" (${ROLLUP_COLUMNS},
      CONSTRAINT "PK_fb5230ecd856cf2417966e38201" PRIMARY KEY ("tenant_id", "bucket", "agent_id", "provider", "model"))`);
    await q.query(`CREATE INDEX "idx_usage_hourly_bucket" ON "usage_hourly" ("bucket")`);
    await q.query(`CREATE TABLE "usage_daily" (${ROLLUP_COLUMNS},
      CONSTRAINT "PK_a0be2053c644d9d1b7dc9f88692" PRIMARY KEY ("tenant_id", "bucket", "agent_id", "provider", "model"))`);
    await q.query(`CREATE INDEX "idx_usage_daily_bucket" ON "usage_daily" ("bucket")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "usage_daily"`);
    await q.query(`DROP TABLE "usage_hourly"`);
    await q.query(`DROP TABLE "usage_ledger"`);
  }
}
