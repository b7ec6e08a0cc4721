import type { MigrationInterface, QueryRunner } from 'typeorm';

const LIMIT_COLUMNS = `"tokens_per_day" bigint, "tokens_per_month" bigint, "cost_per_day" numeric(18,6),
  "cost_per_month" numeric(18,6)`;

/**
 * Budgets: a tenant's token and cost limits per UTC day and month beside its
 * quota overrides, its agents' own (`agent_budgets`), and the soft
 * thresholds crossed, one row per budget and period (`budget_thresholds`).
 */
export class Budgets1763930000000 implements MigrationInterface {
  name = 'Budgets1763930000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tenants" ADD "tokens_per_day" bigint`);
    await q.query(`ALTER TABLE "tenants" ADD "tokens_per_month" bigint`);
    await q.query(`ALTER TABLE "tenants" ADD "cost_per_day" numeric(18,6)`);
    await q.query(`ALTER TABLE "tenants" ADD "cost_per_month" numeric(18,6)`);
    await q.query(`
      CREATE TABLE "agent_budgets" ("tenant_id" uuid NOT NULL, "agent_id" varchar(64) NOT NULL, ${LIMIT_COLUMNS},
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_agent_budgets" PRIMARY KEY ("tenant_id", "agent_id"))`);
    await q.query(`
      CREATE TABLE "budget_thresholds" ("tenant_id" uuid NOT NULL, "agent_id" varchar(64) NOT NULL,
        "budget" varchar(32) NOT NULL, "period_start" timestamptz NOT NULL, "used" numeric(24,6) NOT NULL,
        "crossed_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_budget_thresholds" PRIMARY KEY ("tenant_id", "agent_id", "budget", "period_start"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "budget_thresholds"`);
    await q.query(`DROP TABLE "agent_budgets"`);
    await q.query(`ALTER TABLE "tenants" DROP COLUMN "cost_per_month"`);
    await q.query(`ALTER TABLE "tenants" DROP COLUMN "cost_per_day"`);
    await q.query(`ALTER TABLE "tenants" DROP COLUMN "tokens_per_month"`);
    await q.query(`ALTER TABLE "tenants" DROP COLUMN "tokens_per_day"`);
  }
}
