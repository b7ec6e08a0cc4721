import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The hash of the message that created a task (see `messageHash`), so that
 * its messageId sent again with another message is refused instead of
 * answered with this task. Tasks created before it have none: a resend of
 * their messageId gets the task, as it did.
 */
export class TaskMessageHash1763860000000 implements MigrationInterface {
  name = 'TaskMessageHash1763860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "a2a_tasks" ADD COLUMN "message_hash" varchar(64)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "a2a_tasks" DROP COLUMN "message_hash"`);
  }
}
