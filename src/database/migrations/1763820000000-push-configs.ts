import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Push notification configs (spec §3.1.7–3.1.10) and their delivery state.
 * The task's event log is the outbox: each config keeps a cursor
 * (`delivered_seq`) into it, so a webhook gets every update committed after
 * the cursor, in order, whenever it is reachable again.
 */
export class PushConfigs1763820000000 implements MigrationInterface {
  name = 'PushConfigs1763820000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "push_configs" (
        "id" uuid NOT NULL,
        "tenant_id" uuid NOT NULL,
        "task_id" varchar(64) NOT NULL,
        "config_id" varchar(256) NOT NULL,
        "dialect" varchar(8) NOT NULL,
        "url" text NOT NULL,
        "token" text,
        "auth_scheme" varchar(64),
        "credentials" text,
        "state" varchar(16) NOT NULL DEFAULT 'active',
        "delivered_seq" integer NOT NULL DEFAULT 0,
        "delivered_count" integer NOT NULL DEFAULT 0,
        "attempts" integer NOT NULL DEFAULT 0,
        "next_attempt_at" timestamptz NOT NULL DEFAULT now(),
        "first_failed_at" timestamptz,
        "last_attempt_at" timestamptz,
        "last_delivered_at" timestamptz,
        "last_error" text,
        "lease_owner" varchar(64),
        "lease_expires_at" timestamptz,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_push_configs" PRIMARY KEY ("id"),
        CONSTRAINT "ck_push_configs_state" CHECK ("state" IN ('active', 'dead')),
        CONSTRAINT "fk_push_configs_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
        CONSTRAINT "fk_push_configs_task" FOREIGN KEY ("task_id") REFERENCES "a2a_tasks"("task_id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "uq_push_configs_task" ON "push_configs" ("task_id", "config_id")`);
    // The delivery worker's scan: only active configs, by when they are due.
    await q.query(`CREATE INDEX "idx_push_configs_due" ON "push_configs" ("next_attempt_at") WHERE "state" = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "push_configs"`);
  }
}
