import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenants' own remote A2A agents and MCP servers (`/v1/remote-agents`, `/v1/mcp-servers`): the entry's fields in
 * `config` (each secret shown as "set"), the secrets sealed together in `secrets`.
 */
export class TenantRegistries1763910000000 implements MigrationInterface {
  name = 'TenantRegistries1763910000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tenant_registry_entries" (
        "id" uuid NOT NULL,
        "tenant_id" uuid NOT NULL,
        "kind" varchar(8) NOT NULL,
        "name" varchar(64) NOT NULL,
        "config" jsonb NOT NULL,
        "secrets" text,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_tenant_registry_entries" PRIMARY KEY ("id"),
        CONSTRAINT "fk_tenant_registry_entries_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id")
          ON DELETE CASCADE,
        CONSTRAINT "ck_tenant_registry_entries_kind" CHECK ("kind" IN ('a2a', 'mcp'))
      )`);
    await q.query(
      `CREATE UNIQUE INDEX "uq_tenant_registry_entries_name" ON "tenant_registry_entries" ("tenant_id", "kind", "name")`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tenant_registry_entries"`);
  }
}
