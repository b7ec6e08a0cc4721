import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How large each task's content is, kept beside it so that a page of tasks
 * can be cut to a byte budget before any of it is read: `history_bytes` and
 * `artifacts_bytes` (each shown or left out by the client's view) and
 * `extra_bytes` (metadata and the status message, always shown). Sizes are
 * those of PostgreSQL's JSON text of the values, which every write keeps up
 * to date in the statement that changes them.
 */
export class TaskContentBytes1763850000000 implements MigrationInterface {
  name = 'TaskContentBytes1763850000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE "a2a_tasks"
        ADD COLUMN "history_bytes" bigint NOT NULL DEFAULT 0,
        ADD COLUMN "artifacts_bytes" bigint NOT NULL DEFAULT 0,
        ADD COLUMN "extra_bytes" bigint NOT NULL DEFAULT 0`);
    await q.query(`
      UPDATE "a2a_tasks" SET
        "history_bytes" = octet_length("history"::text),
        "artifacts_bytes" = octet_length("artifacts"::text),
        "extra_bytes" = octet_length("metadata"::text) + COALESCE(octet_length("status_message"::text), 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE "a2a_tasks" DROP COLUMN "history_bytes", DROP COLUMN "artifacts_bytes", DROP COLUMN "extra_bytes"`);
  }
}
