import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { pgliteDriver, type PGlitePool } from '../../src/database/pglite-pool.js';

describe('embedded PGlite pool', () => {
  let ds: DataSource;
  before(async () => {
    ds = new DataSource({
      type: 'postgres',
      driver: pgliteDriver(undefined),
      database: 'postgres',
      username: 'postgres',
    });
    await ds.initialize();
    await ds.query('CREATE TABLE t (id int PRIMARY KEY, v text)');
  });
  after(async () => {
    await ds.destroy();
  });

  it('keeps concurrent transactions apart: a rollback undoes only its own writes', async () => {
    const ok = ds.transaction(async (em) => {
      await em.query(`INSERT INTO t VALUES (1, 'kept')`);
      await sleep(30);
      await em.query(`INSERT INTO t VALUES (2, 'kept')`);
    });
    const failing = ds.transaction(async (em) => {
      await em.query(`INSERT INTO t VALUES (3, 'dropped')`);
      await sleep(10);
      throw new Error('roll me back');
    });
    const plain = ds.query(`INSERT INTO t VALUES (4, 'autocommit')`);
    const results = await Promise.allSettled([ok, failing, plain]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    const rows = await ds.query<{ id: number }[]>('SELECT id FROM t ORDER BY id');
    assert.deepEqual(
      rows.map((r) => r.id),
      [1, 2, 4],
    );
  });

  it('reports affected rows for UPDATE and DELETE', async () => {
    const upd = await ds.createQueryBuilder().update('t').set({ v: 'x' }).where('id IN (1, 2)').execute();
    assert.equal(upd.affected, 2);
    const none = await ds.createQueryBuilder().update('t').set({ v: 'x' }).where('id = 99').execute();
    assert.equal(none.affected, 0);
    const del = await ds.createQueryBuilder().delete().from('t').where('id = 4').execute();
    assert.equal(del.affected, 1);
  });

  it('returns int8 as a string, like node-postgres', async () => {
    const [row] = await ds.query<{ n: unknown }[]>('SELECT 9007199254740993::bigint AS n');
    assert.equal(row?.n, '9007199254740993');
  });

  it('surfaces SQL errors with the PostgreSQL error code', async () => {
    await assert.rejects(ds.query(`INSERT INTO t VALUES (1, 'dup')`), (err: { driverError?: { code?: string } }) => {
      assert.equal(err.driverError?.code, '23505');
      return true;
    });
  });

  describe('named statements (the hot path)', () => {
    const pool = (): PGlitePool => (ds.driver as unknown as { master: PGlitePool }).master;
    const INSERT = { name: 'test_insert', text: `INSERT INTO t VALUES ($1, $2) RETURNING id, v, now() AS at` };
    const plans = async (): Promise<string[]> =>
      (await ds.query<{ name: string }[]>('SELECT name FROM pg_prepared_statements ORDER BY name')).map((r) => r.name);

    it('prepares a statement once, then binds and runs it with typed results', async () => {
      const a = await pool().prepared(INSERT.name, INSERT.text, [10, 'ten']);
      const b = await pool().prepared(INSERT.name, INSERT.text, [11, null]);
      assert.deepEqual(
        [a.rows, b.rows].map((rows) => rows.map((r) => ({ ...(r as object), at: undefined }))),
        [[{ id: 10, v: 'ten', at: undefined }], [{ id: 11, v: null, at: undefined }]],
      );
      assert.ok((a.rows[0] as { at: unknown }).at instanceof Date);
      assert.equal(a.rowCount, 1);
      assert.deepEqual(await plans(), ['test_insert']);
    });

    it('reports an error with its code and constraint, and the session goes on', async () => {
      await assert.rejects(
        pool().prepared(INSERT.name, INSERT.text, [10, 'again']),
        (err: { code?: string; constraint?: string }) => {
          assert.equal(err.code, '23505');
          assert.equal(err.constraint, 't_pkey');
          return true;
        },
      );
      // A statement that does not parse is not kept.
      await assert.rejects(pool().prepared('test_bad', 'SELEC 1', []), /syntax error/);
      assert.deepEqual(await plans(), ['test_insert']);
      const r = await pool().prepared(INSERT.name, INSERT.text, [12, 'twelve']);
      assert.equal((r.rows[0] as { v: string }).v, 'twelve');
    });

    it('refuses a name it prepared for another text, like node-postgres', async () => {
      await assert.rejects(pool().prepared(INSERT.name, 'SELECT 1', []), /prepared with another text/);
    });

    it('waits for a transaction that holds the session', async () => {
      const order: string[] = [];
      let named: Promise<number> | undefined;
      await assert.rejects(
        ds.transaction(async (em) => {
          await em.query(`INSERT INTO t VALUES (20, 'in tx')`);
          // Asked for while the transaction holds the session: it runs after, not inside it.
          named = pool()
            .prepared('test_count', 'SELECT count(*)::int AS n FROM t WHERE id = $1', [20])
            .then((r) => {
              order.push('named');
              return (r.rows[0] as { n: number }).n;
            });
          await sleep(30);
          order.push('tx');
          throw new Error('roll back');
        }),
      );
      assert.equal(await named, 0);
      assert.deepEqual(order, ['tx', 'named']);
    });
  });
});
