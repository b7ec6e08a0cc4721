import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { freshDatabase, REAL_POSTGRES, type TestDatabase } from '../helpers/database.js';
import { HttpClient } from '../helpers/http.js';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';
import { acceptedInOrder, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * At-least-once across replicas: the replica delivering a push is killed
 * (SIGKILL) while its POST is in flight; the other replica takes the
 * config over once the claim expires and delivers the rest, in order, the
 * interrupted event again under the same delivery id.
 */
describe(
  'push delivery survives a replica killed mid-delivery',
  { skip: !REAL_POSTGRES && 'needs a PostgreSQL server' },
  () => {
    let db: TestDatabase;
    let a: ServerProcess;
    let b: ServerProcess | undefined;
    let token: string;
    const homes: string[] = [];
    const admin = `adm_${'p'.repeat(40)}`;
    const receiver = new WebhookReceiver();
    const env = (home: string) => ({
      ARBITER_HOME: home,
      ARBITER_ADMIN_TOKEN: admin,
      DATABASE_URL: db.url!,
      ARBITER_DEFAULT_MODEL: 'echo',
      ARBITER_ECHO_DELAY_MS: '5',
      ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
      ARBITER_PUSH_POLL_MS: '100',
      // The claim B waits out after A is killed; a POST's timeout must be shorter (and B's POSTs are quick).
      ARBITER_PUSH_TIMEOUT_MS: '4000',
      ARBITER_PUSH_LEASE_MS: '5000',
      ARBITER_PUSH_BACKOFF_BASE_MS: '50',
      ARBITER_PUSH_BACKOFF_MAX_MS: '200',
    });

    before(async () => {
      db = await freshDatabase();
      await receiver.start();
      homes.push(tempHome(), tempHome());
      a = await startServerProcess(env(homes[0]));
      const created = await new HttpClient(a.url).withToken(admin).post('/v1/admin/tenants', { name: 'push-replicas' });
      token = created.body.token.token as string;
    });
    after(async () => {
      await a?.stop('SIGKILL');
      await b?.stop('SIGTERM');
      await receiver.stop();
      await db?.drop();
      for (const h of homes) rmSync(h, { recursive: true, force: true });
    });

    it('the other replica delivers everything after the claim expires; the interrupted delivery repeats under its id', async () => {
      receiver.mode = 'hang';
      const sent = await a2a(a.url, token).send('alpha beta gamma delta', {
        configuration: { taskPushNotificationConfig: { url: receiver.url, id: 'hook' } },
      });
      const taskId = sent.result.task.id as string;
      // A holds the claim and its first POST hangs at the receiver.
      await waitFor(async () => (receiver.deliveries.length > 0 ? true : undefined));
      const interrupted = receiver.deliveries[0];
      assert.equal(interrupted.status, 'hung');
      // Killed while that POST is in flight, whatever the push timeout: then B starts and takes over.
      await a.stop('SIGKILL');
      receiver.mode = 'ok';
      b = await startServerProcess(env(homes[1]));
      const http = new HttpClient(b.url).withToken(token);
      const expected = await waitFor(async () => {
        const task = await http.get(`/v1/requests/${taskId}`);
        if (!['completed', 'failed'].includes(task.body.state)) return undefined;
        const log = await readSse(
          await fetch(`${b!.url}/v1/requests/${taskId}/events?format=log`, {
            headers: { authorization: `Bearer ${token}` },
          }),
        );
        const seqs = log.events.filter((e) => e.event === 'status' || e.event === 'artifact').map((e) => Number(e.id));
        return acceptedInOrder(receiver.accepted).seqs.length >= seqs.length ? seqs : undefined;
      });
      const { seqs } = acceptedInOrder(receiver.accepted);
      assert.deepEqual(seqs, expected, 'every pushable event, in order');
      const again = receiver.accepted.find((d) => d.seq === interrupted.seq)!;
      assert.equal(again.deliveryId, interrupted.deliveryId, 'the same delivery id as the interrupted POST');
      const view = (await http.get(`/v1/requests/${taskId}/push-configs`)).body.items[0];
      assert.equal(view.state, 'active');
      assert.equal(view.delivered_seq, view.last_seq);
    });
  },
);
