import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Push webhook credentials become stored secrets (`SecretBox.toStored`): each value is either sealed
 * (`v1:<kid>:…`, AES-256-GCM) or marked as stored without a key (`plain:…`). The existing values were stored as
 * they came: they are marked plain here, and `npm run secrets:rotate` seals them once a key is set.
 */
export class PushSecrets1763900000000 implements MigrationInterface {
  name = 'PushSecrets1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE "push_configs" SET "token" = 'plain:' || "token" WHERE "token" IS NOT NULL`);
    await q.query(
      `UPDATE "push_configs" SET "credentials" = 'plain:' || "credentials" WHERE "credentials" IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    // A sealed value cannot be opened here (the key is not the migration's): going back would leave ciphertext
    // where a token is expected, so it is refused while any is stored.
    const sealed = (await q.query(
      `SELECT count(*)::int AS n FROM "push_configs"
        WHERE "token" NOT LIKE 'plain:%' OR "credentials" NOT LIKE 'plain:%'`,
    )) as { n: number }[];
    if ((sealed[0]?.n ?? 0) > 0) {
      throw new Error('push configs hold sealed credentials; delete those configs before reverting this migration');
    }
    await q.query(`UPDATE "push_configs" SET "token" = substr("token", 7) WHERE "token" LIKE 'plain:%'`);
    await q.query(
      `UPDATE "push_configs" SET "credentials" = substr("credentials", 7) WHERE "credentials" LIKE 'plain:%'`,
    );
  }
}
