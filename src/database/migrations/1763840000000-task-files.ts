import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The bytes of file parts, kept out of the event log's and the task row's
 * JSON: a stored part names its file (`x-arbiter.file_ref`), and reads put
 * the bytes back. Files go with their task (retention, conversation delete)
 * and with their tenant.
 */
export class TaskFiles1763840000000 implements MigrationInterface {
  name = 'TaskFiles1763840000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "task_files" (
        "id" uuid NOT NULL,
        "tenant_id" uuid NOT NULL,
        "task_id" varchar(64) NOT NULL,
        "media_type" varchar(128) NOT NULL,
        "filename" varchar(256),
        "size" integer NOT NULL,
        "bytes" bytea NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_task_files" PRIMARY KEY ("id"),
        CONSTRAINT "ck_task_files_size" CHECK ("size" = octet_length("bytes")),
        CONSTRAINT "fk_task_files_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
        CONSTRAINT "fk_task_files_task" FOREIGN KEY ("task_id") REFERENCES "a2a_tasks"("task_id") ON DELETE CASCADE
      )`);
    // The cascade from a task's delete looks its files up by task.
    await q.query(`CREATE INDEX "idx_task_files_task" ON "task_files" ("task_id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "task_files"`);
  }
}
