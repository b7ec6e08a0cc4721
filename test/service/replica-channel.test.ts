import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/app-config.js';
import { Latch } from '../../src/common/latch.js';
import { InstanceIdentity } from '../../src/database/instance-identity.js';
import { ReplicaChannel } from '../../src/database/replica-channel.service.js';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { tempHome } from '../helpers/server.js';

const CHANNEL = 'arbiter_test_applied';

/**
 * Two replicas' notice connections on one PostgreSQL database: a change is
 * answered only once every replica applied it — including one whose handler
 * must first re-read what changed.
 */
describe(
  'the replica channel: a change is applied everywhere before it is answered',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let a: ReplicaChannel;
    let b: ReplicaChannel;

    before(async () => {
      db = await freshDatabase();
      const config = loadConfig({ DATABASE_URL: db.url!, ARBITER_HOME: tempHome() });
      a = new ReplicaChannel(config, new InstanceIdentity());
      b = new ReplicaChannel(config, new InstanceIdentity());
    });
    after(async () => {
      await a?.beforeApplicationShutdown();
      await b?.beforeApplicationShutdown();
      await db?.drop();
    });

    it('waits for a handler that re-reads: confirmed when its promise settles, not when it was called', async () => {
      const order: string[] = [];
      const heard = new Latch();
      const reread = new Latch();
      a.listenApplied(CHANNEL, (payload) => void order.push(`a applied ${payload}`));
      b.listenApplied(CHANNEL, (payload) => {
        order.push(`b heard ${payload}`);
        heard.open();
        return reread.wait().then(() => void order.push(`b applied ${payload}`));
      });
      await a.onApplicationBootstrap();
      await b.onApplicationBootstrap();

      const { done } = a.appliedEverywhere(CHANNEL, 'x', 120_000);
      let answered = false;
      const answering = done.then(() => {
        answered = true;
        order.push('answered');
      });
      await a.run(`SELECT pg_notify($1, 'x')`, [CHANNEL], 30_000);
      // B heard the notice and is still re-reading: not confirmed, whatever time passes meanwhile.
      await heard.wait();
      // Anything B sent on its connection so far has committed, and A has read what reached it by then.
      await b.run('SELECT 1', [], 30_000);
      await a.run('SELECT 1', [], 30_000);
      assert.equal(answered, false, 'answered before B applied the change');
      reread.open();
      await answering;
      assert.deepEqual(
        order.filter((e) => e !== 'a applied x'),
        ['b heard x', 'b applied x', 'answered'],
      );
      assert.ok(order.indexOf('a applied x') < order.indexOf('answered'));
    });
  },
);
