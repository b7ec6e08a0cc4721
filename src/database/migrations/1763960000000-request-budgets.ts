import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Request budgets: a tenant's and an agent's limits on the messages sent to its agents per UTC day and month,
 * and the durable count they are checked against — the messages each agent took per UTC day
 * (`usage_requests`), kept by the statement that stores each new task or continuation.
 */
export class RequestBudgets1763960000000 implements MigrationInterface {
  name = 'RequestBudgets1763960000000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['tenants', 'agent_budgets']) {
      await q.query(`ALTER TABLE "${table}" ADD "requests_per_day" bigint`);
      await q.query(`ALTER TABLE "${table}" ADD "requests_per_month" bigint`);
    }
    await q.query(`
      CREATE TABLE "usage_requests" ("tenant_id" uuid NOT NULL, "bucket" timestamptz NOT NULL,
        "agent_id" varchar(64) NOT NULL, "requests" bigint NOT NULL DEFAULT 0,
        CONSTRAINT "PK_usage_requests" PRIMARY KEY ("tenant_id", "bucket", "agent_id"))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "usage_requests"`);
    for (const table of ['agent_budgets', 'tenants']) {
      await q.query(`ALTER TABLE "${table}" DROP COLUMN "requests_per_month"`);
      await q.query(`ALTER TABLE "${table}" DROP COLUMN "requests_per_day"`);
    }
  }
}
