import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { safeError } from '../common/safe-error.js';

/** How often the tables' sizes are compared with what their statistics know. */
export const STATISTICS_CHECK_MS = 5_000;
/** A table whose statistics were never gathered is analyzed once it is larger than this many pages (128 KiB). */
const FIRST_PAGES = 16;
/** One replica analyzes at a time (`pg_try_advisory_lock`); the others see the result on their next check. */
const ANALYZE_LOCK_KEY = 0x41524253; // "ARBS"

/**
 * The tables of this schema that have grown to more than twice the size their
 * statistics know (`relpages`, set by the last ANALYZE or VACUUM), by the size
 * of their files now, which is always current; each by its name as a `regclass`
 * writes it (quoted, qualified when the search path would not find it), with
 * that size in pages.
 */
const GROWN = `
  SELECT c.oid::regclass::text AS name, (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS pages
    FROM pg_class c
   WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
     AND pg_relation_size(c.oid) / current_setting('block_size')::int > greatest(2 * c.relpages, $1::int)`;

/**
 * Keeps the planner's statistics of Arbiter's tables in step with their size.
 *
 * The hot path's statements are prepared once per connection, and PostgreSQL
 * keeps a prepared statement's generic plan until the statistics of a table it
 * reads change. A plan made while a table was small — a fresh database — reads
 * the whole table where an index lookup is meant (an append to a task found by
 * its id), and goes on doing so as the table grows, each statement slower than
 * the last, until the table is analyzed. Autovacuum analyzes a table once a
 * tenth of it has changed, at most once a minute per database — and not at all
 * where it is turned off (some development servers), nor in the embedded
 * database (one process: no autovacuum). So every `STATISTICS_CHECK_MS` each
 * replica looks for tables that have more than doubled since their statistics
 * were gathered, and analyzes them: about one ANALYZE per doubling of a table,
 * each replacing the plans that read it on their next use. Where autovacuum
 * runs, it has usually been there first and this finds nothing.
 */
@Injectable()
export class PlannerStatistics implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('PlannerStatistics');
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<string[]> | undefined;
  /**
   * The size at which a table was skipped here: one this role may not analyze (PostgreSQL skips it with a
   * warning, and its statistics stay as they were), or held by another, is tried again only once it has doubled
   * again (or been emptied).
   */
  private readonly tried = new Map<string, number>();

  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.check(), STATISTICS_CHECK_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
  }

  /** Analyzes the tables that have outgrown their statistics; returns their names (none if another replica is at it). */
  check(): Promise<string[]> {
    this.checking ??= this.analyzeGrown().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async analyzeGrown(): Promise<string[]> {
    try {
      const grown = (await this.ds.query<{ name: string; pages: number }[]>(GROWN, [FIRST_PAGES])).filter((t) => {
        const tried = this.tried.get(t.name);
        // Not yet tried at this size; or tried when it was larger (it was emptied since).
        return tried === undefined || t.pages > 2 * tried || t.pages < tried;
      });
      if (grown.length === 0) return [];
      // One connection for the lock and the ANALYZEs, each its own short transaction: a table that something
      // else holds (autovacuum, which gathers its statistics anyway; an index being built) is skipped, not waited for.
      const runner = this.ds.createQueryRunner();
      await runner.connect();
      try {
        const [lock] = (await runner.query('SELECT pg_try_advisory_lock($1) AS ok', [ANALYZE_LOCK_KEY])) as {
          ok: boolean;
        }[];
        if (!lock?.ok) return [];
        let skipped: Set<string>;
        try {
          for (const t of grown) await runner.query(`ANALYZE (SKIP_LOCKED) ${t.name}`);
          // A table still larger than twice what its statistics know was skipped: held by another, or not this
          // role's to analyze. It is tried again once it has doubled again.
          const still = (await runner.query(GROWN, [FIRST_PAGES])) as { name: string }[];
          skipped = new Set(still.map((t) => t.name));
        } finally {
          await runner.query('SELECT pg_advisory_unlock($1)', [ANALYZE_LOCK_KEY]);
        }
        for (const t of grown) {
          if (skipped.has(t.name)) this.tried.set(t.name, t.pages);
          else this.tried.delete(t.name);
        }
        const analyzed = grown.filter((t) => !skipped.has(t.name));
        if (analyzed.length) this.logger.debug({ tables: analyzed }, 'analyzed tables that outgrew their statistics');
        return analyzed.map((t) => t.name);
      } finally {
        await runner.release();
      }
    } catch (err) {
      // The database is away, or busy: the next check tries again.
      this.logger.warn({ err: safeError(err) }, 'could not refresh the planner’s statistics');
      return [];
    }
  }
}
