import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-tenant quotas. Each tenant may override the deployment's defaults
 * (NULL = the default, 0 = unlimited). `rate_windows` holds the send counts
 * of fixed windows, summed across replicas; `replica_usage` each replica's
 * running tasks and open streams per tenant, published every second or so.
 * Both are written off the request path (see src/quotas).
 */
export class Quotas1763830000000 implements MigrationInterface {
  name = 'Quotas1763830000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE "tenants"
        ADD COLUMN "sends_per_minute" integer,
        ADD COLUMN "max_running_tasks" integer,
        ADD COLUMN "max_open_streams" integer,
        ADD CONSTRAINT "ck_tenants_limits" CHECK (
          coalesce("sends_per_minute", 0) >= 0 AND coalesce("max_running_tasks", 0) >= 0
          AND coalesce("max_open_streams", 0) >= 0)
    `);
    await q.query(`
      CREATE TABLE "rate_windows" (
        "key" varchar(128) NOT NULL,
        "window_start" bigint NOT NULL,
        "hits" integer NOT NULL,
        "expires_at" timestamptz NOT NULL,
        CONSTRAINT "PK_rate_windows" PRIMARY KEY ("key", "window_start")
      )
    `);
    await q.query(`CREATE INDEX "idx_rate_windows_expires" ON "rate_windows" ("expires_at")`);
    await q.query(`
      CREATE TABLE "replica_usage" (
        "replica_id" varchar(128) NOT NULL,
        "tenant_id" uuid NOT NULL,
        "running" integer NOT NULL,
        "streams" integer NOT NULL,
        "seen_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_replica_usage" PRIMARY KEY ("replica_id", "tenant_id")
      )
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "replica_usage"`);
    await q.query(`DROP TABLE "rate_windows"`);
    await q.query(
      `ALTER TABLE "tenants" DROP CONSTRAINT "ck_tenants_limits", DROP COLUMN "sends_per_minute",
         DROP COLUMN "max_running_tasks", DROP COLUMN "max_open_streams"`,
    );
  }
}
