// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { a2a, V1, waitFor } from '../helpers/a2a.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * One receiver that does not answer holds its own config only. The push timeout is the longest allowed (2 min),
 * so a worker that waited for it before serving anyone else would fail the bound below, on any machine.
 */
describe('push: a webhook that does not answer delays no other', () => {
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  const slow = new WebhookReceiver();
  const fast = new WebhookReceiver();

  before(async () => {
    await slow.start();
    await fast.start();
    slow.mode = 'hang';
    server = await startTestServer({
      env: {
        ARBITER_PUSH_ALLOWLIST: '127.0.0.1',
        ARBITER_PUSH_POLL_MS: '100',
        ARBITER_PUSH_TIMEOUT_MS: '120000',
        ARBITER_PUSH_LEASE_MS: '180000',
      },
    });
    a = await newTenant(server, 'push-slow');
    b = await newTenant(server, 'push-fast');
  });
  after(async () => {
    await server?.close();
    await slow.stop();
    await fast.stop();
  });

  const send = async (token: string, url: string): Promise<string> => {
    const res = await a2a(server.url, token, 'index', V1).post('SendMessage', {
      message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] },
      configuration: { taskPushNotificationConfig: { url } },
    });
    const reply = (await res.json()) as { result?: { task?: { id: string } } };
    assert.ok(reply.result?.task?.id, JSON.stringify(reply));
    return reply.result.task.id;
  };

  it("another tenant's webhook gets its updates while the first one's request still hangs", async () => {
    await send(a.token, slow.url);
    // The slow receiver holds the first update's request open, unanswered.
    await waitFor(async () => (slow.deliveries.length > 0 ? true : undefined));
    const taskB = await send(b.token, fast.url);
    const states = await waitFor(async () => {
      const got = fast.accepted.filter((d) => d.body?.statusUpdate?.taskId === taskB);
      const last = got.at(-1)?.body.statusUpdate.status.state as string | undefined;
      return last === 'TASK_STATE_COMPLETED' ? got.map((d) => d.body.statusUpdate.status.state as string) : undefined;
    }, 60_000);
    assert.equal(states[0], 'TASK_STATE_SUBMITTED');
    // The first receiver's request is still unanswered, and nothing more was sent to it meanwhile.
    assert.deepEqual(
      slow.deliveries.map((d) => d.status),
      ['hung'],
    );
  });
});
