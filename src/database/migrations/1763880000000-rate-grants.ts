import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate windows are granted, not only counted: a window's `hits` is what
 * every replica has admitted or holds granted, never more than its limit,
 * and `last_grant` what the last statement that changed it granted (so the
 * statement can return it). See `PgThrottlerStorage`.
 */
export class RateGrants1763880000000 implements MigrationInterface {
  name = 'RateGrants1763880000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "rate_windows" ADD COLUMN "last_grant" integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "rate_windows" DROP COLUMN "last_grant"`);
  }
}
