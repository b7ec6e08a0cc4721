import type { MigrationInterface, QueryRunner } from 'typeorm';

const KEY = `"tenant_id" uuid NOT NULL, "grain" smallint NOT NULL, "bucket" timestamptz NOT NULL`;

/**
 * The overview's statistics: task outcomes, run-time histograms and A2A
 * errors per tenant and minute or hour, which every replica adds its counts
 * to every few seconds (`stats/stats-recorder.service.ts`).
 */
export class Stats1763940000000 implements MigrationInterface {
  name = 'Stats1763940000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "stats_tasks" (${KEY},
      "started" integer NOT NULL DEFAULT '0', "completed" integer NOT NULL DEFAULT '0',
      "failed" integer NOT NULL DEFAULT '0', "canceled" integer NOT NULL DEFAULT '0',
      "input_required" integer NOT NULL DEFAULT '0',
      CONSTRAINT "PK_8654fbd307563d5b4fce9af953b" PRIMARY KEY ("tenant_id", "grain", "bucket"))`);
    await q.query(`CREATE INDEX "idx_stats_tasks_bucket" ON "stats_tasks" ("grain", "bucket")`);
    await q.query(`CREATE TABLE "stats_latency" (${KEY},
      "kind" varchar(16) NOT NULL, "slot" smallint NOT NULL, "n" integer NOT NULL DEFAULT '0',
      CONSTRAINT "PK_c81dd4c14f528705528dfb1644f" PRIMARY KEY ("tenant_id", "grain", "bucket", "kind", "slot"))`);
    await q.query(`CREATE INDEX "idx_stats_latency_bucket" ON "stats_latency" ("grain", "bucket")`);
    await q.query(`CREATE TABLE "stats_a2a_errors" (${KEY},
      "binding" varchar(16) NOT NULL, "code" varchar(64) NOT NULL, "n" integer NOT NULL DEFAULT '0',
      CONSTRAINT "PK_279543f647ed37ad3a50525e87e" PRIMARY KEY ("tenant_id", "grain", "bucket", "binding", "code"))`);
    await q.query(`CREATE INDEX "idx_stats_a2a_errors_bucket" ON "stats_a2a_errors" ("grain", "bucket")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "stats_a2a_errors"`);
    await q.query(`DROP TABLE "stats_latency"`);
    await q.query(`DROP TABLE "stats_tasks"`);
  }
}
