import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A2A tasks and their append-only event log; terminal states guarded by a trigger. */
export class Tasks1763780000000 implements MigrationInterface {
  name = 'Tasks1763780000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "a2a_tasks" (
        "task_id" varchar(64) NOT NULL,
        "tenant_id" uuid NOT NULL,
        "agent_id" varchar(64) NOT NULL,
        "context_id" varchar(256) NOT NULL,
        "state" varchar(32) NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL,
        "status_message" jsonb,
        "error_message" text NOT NULL DEFAULT '',
        "history" jsonb NOT NULL DEFAULT '[]',
        "artifacts" jsonb NOT NULL DEFAULT '[]',
        "metadata" jsonb NOT NULL DEFAULT '{}',
        "input_tokens" integer NOT NULL DEFAULT 0,
        "output_tokens" integer NOT NULL DEFAULT 0,
        "last_seq" integer NOT NULL DEFAULT 0,
        "owner_instance" varchar(64),
        "lease_expires_at" timestamptz,
        CONSTRAINT "PK_a2a_tasks" PRIMARY KEY ("task_id"),
        CONSTRAINT "fk_a2a_tasks_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(
      `CREATE INDEX "idx_a2a_tasks_list" ON "a2a_tasks" ("tenant_id", "agent_id", "updated_at", "task_id")`,
    );
    await q.query(`CREATE INDEX "idx_a2a_tasks_context" ON "a2a_tasks" ("tenant_id", "context_id")`);
    await q.query(`
      CREATE TABLE "task_events" (
        "task_id" varchar(64) NOT NULL,
        "seq" integer NOT NULL,
        "kind" varchar(32) NOT NULL,
        "payload" jsonb NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_task_events" PRIMARY KEY ("task_id", "seq"),
        CONSTRAINT "fk_task_events_task" FOREIGN KEY ("task_id") REFERENCES "a2a_tasks"("task_id") ON DELETE CASCADE
      )`);
    // Terminal states never change, whatever code path tries.
    await q.query(`
      CREATE FUNCTION "a2a_tasks_terminal_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')
           AND (NEW.state IS DISTINCT FROM OLD.state
                OR NEW.status_message IS DISTINCT FROM OLD.status_message
                OR NEW.history IS DISTINCT FROM OLD.history
                OR NEW.artifacts IS DISTINCT FROM OLD.artifacts) THEN
          RAISE EXCEPTION 'task % is in terminal state %', OLD.task_id, OLD.state USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER "trg_a2a_tasks_terminal_guard" BEFORE UPDATE ON "a2a_tasks"
      FOR EACH ROW EXECUTE FUNCTION "a2a_tasks_terminal_guard"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "task_events"`);
    await q.query(`DROP TRIGGER "trg_a2a_tasks_terminal_guard" ON "a2a_tasks"`);
    await q.query(`DROP FUNCTION "a2a_tasks_terminal_guard"()`);
    await q.query(`DROP TABLE "a2a_tasks"`);
  }
}
