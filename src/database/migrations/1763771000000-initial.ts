import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Tenants, their hashed tokens, the admin audit log and stored agents. */
export class Initial1763771000000 implements MigrationInterface {
  name = 'Initial1763771000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "tenants" (
        "id" uuid NOT NULL,
        "name" varchar(128) NOT NULL,
        "disabled_at" timestamptz,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_tenants" PRIMARY KEY ("id")
      )`);
    await q.query(`
      CREATE TABLE "tenant_tokens" (
        "id" uuid NOT NULL,
        "tenant_id" uuid NOT NULL,
        "token_hash" char(64) NOT NULL,
        "prefix" varchar(16) NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "revoked_at" timestamptz,
        "last_used_at" timestamptz,
        CONSTRAINT "PK_tenant_tokens" PRIMARY KEY ("id"),
        CONSTRAINT "fk_tenant_tokens_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "uq_tenant_tokens_hash" ON "tenant_tokens" ("token_hash")`);
    await q.query(`CREATE INDEX "idx_tenant_tokens_tenant" ON "tenant_tokens" ("tenant_id")`);
    await q.query(`
      CREATE TABLE "audit_log" (
        "id" bigserial NOT NULL,
        "actor" varchar(32) NOT NULL,
        "action" varchar(64) NOT NULL,
        "tenant_id" uuid,
        "detail" jsonb NOT NULL DEFAULT '{}'::jsonb,
        "request_id" varchar(128),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_audit_log" PRIMARY KEY ("id")
      )`);
    await q.query(`CREATE INDEX "idx_audit_log_tenant" ON "audit_log" ("tenant_id", "id")`);
    await q.query(`
      CREATE TABLE "agents" (
        "tenant_id" uuid NOT NULL,
        "id" varchar(64) NOT NULL,
        "constitution" jsonb NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_agents" PRIMARY KEY ("tenant_id", "id"),
        CONSTRAINT "fk_agents_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
        CONSTRAINT "ck_agents_id" CHECK ("id" ~ '^[A-Za-z0-9_-]{1,64}$' AND "id" <> 'index')
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "agents"`);
    await q.query(`DROP TABLE "audit_log"`);
    await q.query(`DROP TABLE "tenant_tokens"`);
    await q.query(`DROP TABLE "tenants"`);
  }
}
