import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `last_input_seq`: the seq of the newest user message in a task's log. A run
 * may settle its task (completed, input-required) only once it has taken every
 * message up to it, so a continuation that arrives on another replica while the
 * run is finishing is answered instead of lost.
 */
export class TaskInputs1763810000000 implements MigrationInterface {
  name = 'TaskInputs1763810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "a2a_tasks" ADD COLUMN "last_input_seq" integer NOT NULL DEFAULT 0`);
    await q.query(`
      UPDATE "a2a_tasks" t SET "last_input_seq" = COALESCE(
        (SELECT max(e."seq") FROM "task_events" e WHERE e."task_id" = t."task_id" AND e."kind" = 'message'), 0)
       WHERE t."state" NOT IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`);
    // The lease sweep looks for running tasks by lease expiry.
    await q.query(
      `CREATE INDEX "idx_a2a_tasks_lease" ON "a2a_tasks" ("lease_expires_at") WHERE "lease_expires_at" IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "idx_a2a_tasks_lease"`);
    await q.query(`ALTER TABLE "a2a_tasks" DROP COLUMN "last_input_seq"`);
  }
}
