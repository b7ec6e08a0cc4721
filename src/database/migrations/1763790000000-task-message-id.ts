import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The messageId that created a task: a resend of it finds the task instead of running again. */
export class TaskMessageId1763790000000 implements MigrationInterface {
  name = 'TaskMessageId1763790000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "a2a_tasks" ADD COLUMN "message_id" varchar(256)`);
    await q.query(`CREATE UNIQUE INDEX "uq_a2a_tasks_message" ON "a2a_tasks" ("tenant_id", "agent_id", "message_id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "uq_a2a_tasks_message"`);
    await q.query(`ALTER TABLE "a2a_tasks" DROP COLUMN "message_id"`);
  }
}
