import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { DataSource } from 'typeorm';
import { pgliteDriver } from '../../src/database/pglite-pool.js';

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
});
