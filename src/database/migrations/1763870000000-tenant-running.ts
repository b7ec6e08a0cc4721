import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The states whose tasks count against a tenant's running-task cap (a run holds them). */
const RUNNING = `('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')`;

/**
 * Each tenant's running tasks, counted by the database as tasks enter and
 * leave the running states, so that the running-task cap holds exactly
 * across replicas: a statement that starts runs locks its tenants' rows
 * here (`FOR UPDATE`, which reads the latest count whatever its snapshot),
 * admits only what fits under the cap, and the triggers below count what it
 * wrote. The triggers are per statement (transition tables), and lock the
 * rows they change in tenant order, so that statements never deadlock on
 * them. Every tenant has its row from its creation on.
 */
export class TenantRunning1763870000000 implements MigrationInterface {
  name = 'TenantRunning1763870000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tenant_running" (
        "tenant_id" uuid NOT NULL,
        "running" integer NOT NULL DEFAULT 0,
        CONSTRAINT "PK_tenant_running" PRIMARY KEY ("tenant_id"),
        CONSTRAINT "fk_tenant_running_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(`
      INSERT INTO "tenant_running" ("tenant_id", "running")
      SELECT t."id", (SELECT count(*) FROM "a2a_tasks" a WHERE a."tenant_id" = t."id" AND a."state" IN ${RUNNING})
        FROM "tenants" t`);
    await q.query(`
      CREATE FUNCTION "tenant_running_row"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "tenant_running" ("tenant_id") VALUES (NEW."id") ON CONFLICT DO NOTHING;
        RETURN NULL;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER "trg_tenants_running_row" AFTER INSERT ON "tenants"
      FOR EACH ROW EXECUTE FUNCTION "tenant_running_row"()`);
    // Applies per-tenant changes of the running count, in tenant order.
    await q.query(`
      CREATE FUNCTION "tenant_running_apply"(changes jsonb) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE c record;
      BEGIN
        FOR c IN SELECT (e->>'t')::uuid AS t, (e->>'d')::int AS d FROM jsonb_array_elements(changes) e ORDER BY 1 LOOP
          INSERT INTO "tenant_running" AS r ("tenant_id", "running") VALUES (c.t, greatest(c.d, 0))
          ON CONFLICT ("tenant_id") DO UPDATE SET "running" = greatest(r."running" + c.d, 0);
        END LOOP;
      END
      $$`);
    await q.query(`
      CREATE FUNCTION "a2a_tasks_running_count"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE changes jsonb;
      BEGIN
        IF TG_OP = 'INSERT' THEN
          SELECT jsonb_agg(jsonb_build_object('t', tenant_id, 'd', n)) INTO changes
            FROM (SELECT tenant_id, count(*) AS n FROM new_rows WHERE state IN ${RUNNING} GROUP BY tenant_id) s;
        ELSIF TG_OP = 'DELETE' THEN
          SELECT jsonb_agg(jsonb_build_object('t', tenant_id, 'd', -n)) INTO changes
            FROM (SELECT tenant_id, count(*) AS n FROM old_rows WHERE state IN ${RUNNING} GROUP BY tenant_id) s;
        ELSE
          SELECT jsonb_agg(jsonb_build_object('t', tenant_id, 'd', d)) INTO changes
            FROM (SELECT n.tenant_id, sum((n.state IN ${RUNNING})::int - (o.state IN ${RUNNING})::int) AS d
                    FROM new_rows n JOIN old_rows o USING ("task_id")
                   WHERE (n.state IN ${RUNNING}) <> (o.state IN ${RUNNING})
                   GROUP BY n.tenant_id) s WHERE d <> 0;
        END IF;
        IF changes IS NOT NULL THEN PERFORM "tenant_running_apply"(changes); END IF;
        RETURN NULL;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER "trg_a2a_tasks_running_insert" AFTER INSERT ON "a2a_tasks"
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "a2a_tasks_running_count"()`);
    await q.query(`
      CREATE TRIGGER "trg_a2a_tasks_running_update" AFTER UPDATE ON "a2a_tasks"
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "a2a_tasks_running_count"()`);
    await q.query(`
      CREATE TRIGGER "trg_a2a_tasks_running_delete" AFTER DELETE ON "a2a_tasks"
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "a2a_tasks_running_count"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "trg_a2a_tasks_running_delete" ON "a2a_tasks"`);
    await q.query(`DROP TRIGGER "trg_a2a_tasks_running_update" ON "a2a_tasks"`);
    await q.query(`DROP TRIGGER "trg_a2a_tasks_running_insert" ON "a2a_tasks"`);
    await q.query(`DROP FUNCTION "a2a_tasks_running_count"()`);
    await q.query(`DROP FUNCTION "tenant_running_apply"(jsonb)`);
    await q.query(`DROP TRIGGER "trg_tenants_running_row" ON "tenants"`);
    await q.query(`DROP FUNCTION "tenant_running_row"()`);
    await q.query(`DROP TABLE "tenant_running"`);
  }
}
