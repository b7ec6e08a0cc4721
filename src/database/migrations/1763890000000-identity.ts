import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identity: trusted JWT issuers, named operator tokens, scopes on tenant
 * tokens (existing tokens keep every tenant scope), a tenant's external id
 * (the value an issuer's tenant claim names) and the actor of every audited
 * change.
 */
export class Identity1763890000000 implements MigrationInterface {
  name = 'Identity1763890000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "tenants" ADD COLUMN "external_id" varchar(256)`);
    await q.query(`CREATE UNIQUE INDEX "uq_tenants_external_id" ON "tenants" ("external_id")`);
    await q.query(
      `ALTER TABLE "tenant_tokens" ADD COLUMN "scopes" text array NOT NULL
         DEFAULT '{a2a:invoke,agents:read,agents:write,tasks:read}'`,
    );
    await q.query(`ALTER TABLE "audit_log" ADD COLUMN "actor_id" varchar(512)`);
    await q.query(`
      CREATE TABLE "trusted_issuers" (
        "id" uuid NOT NULL,
        "issuer" varchar(512) NOT NULL,
        "audiences" text array NOT NULL,
        "algorithms" text array NOT NULL,
        "clock_skew_seconds" integer NOT NULL DEFAULT 60,
        "jwks_uri" varchar(1024),
        "tenant_claim" varchar(128),
        "tenant_id" uuid,
        "role_claim" varchar(128),
        "scope_map" jsonb NOT NULL DEFAULT '{}'::jsonb,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_trusted_issuers" PRIMARY KEY ("id"),
        CONSTRAINT "fk_trusted_issuers_tenant" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "uq_trusted_issuers_issuer" ON "trusted_issuers" ("issuer")`);
    await q.query(`
      CREATE TABLE "operator_tokens" (
        "id" uuid NOT NULL,
        "name" varchar(128) NOT NULL,
        "role" varchar(16) NOT NULL,
        "token_hash" char(64) NOT NULL,
        "prefix" varchar(16) NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "revoked_at" timestamptz,
        "last_used_at" timestamptz,
        CONSTRAINT "PK_operator_tokens" PRIMARY KEY ("id"),
        CONSTRAINT "ck_operator_tokens_role" CHECK ("role" IN ('admin', 'auditor'))
      )`);
    await q.query(`CREATE UNIQUE INDEX "uq_operator_tokens_hash" ON "operator_tokens" ("token_hash")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "operator_tokens"`);
    await q.query(`DROP TABLE "trusted_issuers"`);
    await q.query(`ALTER TABLE "audit_log" DROP COLUMN "actor_id"`);
    await q.query(`ALTER TABLE "tenant_tokens" DROP COLUMN "scopes"`);
    await q.query(`DROP INDEX "uq_tenants_external_id"`);
    await q.query(`ALTER TABLE "tenants" DROP COLUMN "external_id"`);
  }
}
