import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Tenant memory for `/mem` (with full-text search) and native conversations. */
export class MemoryConversations1763800000000 implements MigrationInterface {
  name = 'MemoryConversations1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "memory_entries" (
        "id" bigserial NOT NULL,
        "tenant_id" uuid NOT NULL,
        "content" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_memory_entries" PRIMARY KEY ("id"),
        CONSTRAINT "fk_memory_entries_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX "idx_memory_entries_tenant" ON "memory_entries" ("tenant_id", "id")`);
    // Full-text search; queries use the same expression so the index serves them.
    await q.query(
      `CREATE INDEX "idx_memory_entries_search" ON "memory_entries" USING gin (to_tsvector('english', "content"))`,
    );
    await q.query(`
      CREATE TABLE "conversations" (
        "id" varchar(64) NOT NULL,
        "tenant_id" uuid NOT NULL,
        "agent_id" varchar(64) NOT NULL,
        "title" varchar(200) NOT NULL DEFAULT '',
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_conversations" PRIMARY KEY ("id"),
        CONSTRAINT "fk_conversations_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX "idx_conversations_list" ON "conversations" ("tenant_id", "updated_at", "id")`);
    // A conversation's turns are the tasks in its context, oldest first.
    await q.query(`DROP INDEX "idx_a2a_tasks_context"`);
    await q.query(
      `CREATE INDEX "idx_a2a_tasks_context" ON "a2a_tasks" ("tenant_id", "context_id", "agent_id", "created_at")`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "idx_a2a_tasks_context"`);
    await q.query(`CREATE INDEX "idx_a2a_tasks_context" ON "a2a_tasks" ("tenant_id", "context_id")`);
    await q.query(`DROP TABLE "conversations"`);
    await q.query(`DROP TABLE "memory_entries"`);
  }
}
