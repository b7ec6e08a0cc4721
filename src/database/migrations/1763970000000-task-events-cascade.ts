import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log without a foreign key to its task: the key's check, run for every event inserted, cost about a
 * sixth of the database's work for a new task (seven events each). Nothing is lost with it:
 * - every statement that inserts events writes their task's row in the same statement and inserts events only for
 *   the rows it wrote (a task deleted meanwhile takes none), so no event can be written without its task;
 * - a statement-level trigger deletes a task's events with it, as the key's ON DELETE CASCADE did — whoever deletes
 *   the task: retention, a context's deletion, or its tenant's (through that key's cascade). Not a TRUNCATE, nor
 *   an UPDATE of a task's id — neither is done anywhere (docs/operating.md tells operators).
 */
export class TaskEventsCascade1763970000000 implements MigrationInterface {
  name = 'TaskEventsCascade1763970000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION "a2a_tasks_events_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- The ids as an array, looked up in the primary key whatever the plan this connection cached first.
        DELETE FROM "task_events" WHERE "task_id" = ANY(ARRAY(SELECT "task_id" FROM old_rows));
        RETURN NULL;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER "trg_a2a_tasks_events_delete" AFTER DELETE ON "a2a_tasks"
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "a2a_tasks_events_delete"()`);
    await q.query(`ALTER TABLE "task_events" DROP CONSTRAINT "fk_task_events_task"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `DELETE FROM "task_events" e WHERE NOT EXISTS (SELECT 1 FROM "a2a_tasks" a WHERE a."task_id" = e."task_id")`,
    );
    await q.query(`
      ALTER TABLE "task_events" ADD CONSTRAINT "fk_task_events_task"
        FOREIGN KEY ("task_id") REFERENCES "a2a_tasks"("task_id") ON DELETE CASCADE`);
    await q.query(`DROP TRIGGER "trg_a2a_tasks_events_delete" ON "a2a_tasks"`);
    await q.query(`DROP FUNCTION "a2a_tasks_events_delete"()`);
  }
}
