import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EventLog } from '../../src/tasks/event-log/event-log.service.js';
import { TaskError } from '../../src/tasks/task.errors.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, readSse, waitFor } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('a subscriber that cannot keep up', () => {
  let server: TestServer;
  let t: TestTenant;
  before(async () => {
    server = await startTestServer({
      // A live buffer of 2 events: the answer below is more than that however its text is coalesced into events.
      env: { ARBITER_SSE_BUFFER_EVENTS: '2', ARBITER_ECHO_CHUNKS: '30', ARBITER_ECHO_DELAY_MS: '5' },
    });
    t = await newTenant(server, 'slow-reader');
  });
  after(() => server.close());

  it('gets a bounded buffer; on overflow its stream ends with the seq to resume after, and resuming loses nothing', async () => {
    // A held task: the subscriber reads its first event, then stops reading while the task's whole answer (60
    // words in 30 pieces) is written — in that order, not in a race with a timer.
    const agent = a2a(server.url, t.token);
    const taskId = (await agent.send('hold', { returnImmediately: true })).result.task.id as string;
    const log = server.running.app.get(EventLog);
    const tail = log.tail(t.id, taskId, 0);
    const seen: number[] = [];
    const first = await tail.next();
    assert.ok(!first.done);
    seen.push(first.value.seq);
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const answered = await agent.send(words, { taskId, returnImmediately: true });
    assert.ok(answered.result?.task);
    await waitFor(async () =>
      (await t.client.get(`/v1/requests/${taskId}`)).body.state === 'completed' ? true : undefined,
    );
    let failure: unknown;
    try {
      for (;;) {
        const next = await tail.next();
        if (next.done) break;
        seen.push(next.value.seq);
      }
    } catch (err) {
      failure = err;
    }
    assert.ok(
      failure instanceof TaskError && failure.reason === 'subscriber_overflow',
      `overflowed: ${String(failure)}`,
    );
    assert.equal(failure.resumeAfter, seen.at(-1));
    assert.match(failure.message, new RegExp(`resume after seq ${seen.at(-1)}`));
    // Resuming from the hint gives the rest, with no gap.
    const rest = await readSse(
      await fetch(`${server.url}/v1/requests/${taskId}/events?format=log&since_seq=${failure.resumeAfter}`, {
        headers: { authorization: `Bearer ${t.token}` },
      }),
    );
    const all = [...seen, ...rest.events.map((e) => Number(e.id))];
    assert.deepEqual(
      all,
      all.map((_, i) => i + 1),
    );
    assert.equal(rest.events.at(-1)!.data.state, 'TASK_STATE_COMPLETED');
    // Resuming at (or past) the end of a finished task ends at once instead of waiting forever.
    const last = all.at(-1)!;
    for (const since of [last, last + 5]) {
      const empty = await readSse(
        await fetch(`${server.url}/v1/requests/${taskId}/events?since_seq=${since}`, {
          headers: { authorization: `Bearer ${t.token}` },
        }),
      );
      assert.deepEqual(empty.events, []);
    }
  });
});
