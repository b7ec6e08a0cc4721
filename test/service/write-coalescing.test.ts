import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SendParams } from '../../src/a2a-wire/dialects/dialect.js';
import { A2aRequestHandler, type CallContext } from '../../src/a2a-inbound/handler/a2a-request-handler.js';
import { AgentCatalog } from '../../src/registry/services/agent-catalog.service.js';
import { TaskLogWriter } from '../../src/tasks/repositories/task-log.writer.js';
import { EventReads } from '../../src/tasks/repositories/event-reads.repository.js';
import type { StreamItem } from '../../src/a2a-wire/dialects/dialect.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine, tenantPrincipal } from '../helpers/engine.js';
import { FakeProvider } from '../helpers/fake-provider.js';
import { millisOf, V7 } from '../helpers/uuid7.js';

const send = (text: string): SendParams => ({
  message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
  returnImmediately: false,
});

/** The transactions that wrote a task's row and its events (PostgreSQL's `xmin`). */
async function writers(engine: TestEngine, taskId: string): Promise<{ row: string; events: string[] }> {
  const [row] = await engine.ds.query<{ x: string }[]>(`SELECT xmin::text AS x FROM a2a_tasks WHERE task_id = $1`, [
    taskId,
  ]);
  const events = await engine.ds.query<{ x: string }[]>(
    `SELECT DISTINCT xmin::text AS x FROM task_events WHERE task_id = $1`,
    [taskId],
  );
  return { row: row.x, events: events.map((e) => e.x) };
}

/**
 * A new task's run starts while its creation waits for its statement
 * (TaskIntake.create, TaskLogWriter): an in-process model's whole turn is then
 * written by that one statement, and nothing of the run leaves the process
 * before the task is stored.
 */
describe(`write coalescing of a new task's run (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let instant: TestEngine;
  let fake: FakeProvider;
  let page: Server;
  let pageHits = 0;
  const ctxOf = async (engine: TestEngine, agentId = 'index'): Promise<CallContext> => {
    const tenant = await engine.newTenant();
    const agent = await engine.app.get(AgentCatalog).resolve(tenant, agentId);
    return {
      principal: tenantPrincipal(tenant, 't', 'x'),
      agent: agent!,
      signal: new AbortController().signal,
    };
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    page = createServer((_req, res) => {
      pageHits++;
      res.end('page text');
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    instant = await startEngine({
      ARBITER_ECHO_DELAY_MS: '0',
      OPENAI_BASE_URL: `${fake.url}/v1`,
      OPENAI_API_KEY: 'sk-test-coalescing-0001',
      ARBITER_FETCH_ALLOWLIST: `127.0.0.1:${(page.address() as AddressInfo).port}`,
    });
  });
  after(async () => {
    await instant.close();
    await fake.stop();
    page.closeAllConnections();
    await new Promise((r) => page.close(r));
  });

  it('an echo turn that ends at once is written with its task: one statement, one transaction, no update', async () => {
    const ctx = await ctxOf(instant);
    const writes = instant.app.get(TaskLogWriter);
    const before = { ...writes.batches };
    const task = await instant.app.get(A2aRequestHandler).sendMessage(ctx, send('all in one go'));
    assert.equal(task.state, 'TASK_STATE_COMPLETED');
    assert.equal(task.artifacts[0]?.parts[0]?.text, 'all in one go');
    assert.equal(writes.batches.statements - before.statements, 1, 'one statement for the task and its whole run');
    const { row, events } = await writers(instant, task.id);
    assert.deepEqual(events, [row], 'the row and every event in one transaction');
    const [stored] = await instant.ds.query<{ state: string; last_seq: number; lease: string | null; n: string }[]>(
      `SELECT state, last_seq, lease_expires_at AS lease, (SELECT count(*) FROM task_events e WHERE e.task_id = t.task_id) AS n
         FROM a2a_tasks t WHERE task_id = $1`,
      [task.id],
    );
    assert.equal(stored?.state, 'TASK_STATE_COMPLETED');
    assert.equal(stored?.lease, null, 'the lease is released with the settling write');
    assert.equal(Number(stored?.n), stored?.last_seq);
    assert.equal(task.lastSeq, stored?.last_seq);
    // Read back, the task is what the blocking reply said.
    const read = await instant.app.get(A2aRequestHandler).getTask(ctx, { id: task.id });
    assert.deepEqual(read, task);
  });

  it("a new task's id and context id are time-ordered UUIDs of its creation; a client's own contextId is kept", async () => {
    const ctx = await ctxOf(instant);
    const handler = instant.app.get(A2aRequestHandler);
    const start = Date.now();
    const first = await handler.sendMessage(ctx, send('first'));
    assert.match(first.id, V7);
    assert.match(first.contextId, V7);
    assert.ok(millisOf(first.id) >= start && millisOf(first.id) <= Date.now(), first.id);
    // The next millisecond's task sorts after it, in the primary key's order too.
    while (Date.now() <= millisOf(first.id)) await new Promise((r) => setTimeout(r, 1));
    const second = await handler.sendMessage(ctx, send('second'));
    assert.ok(second.id > first.id, `${second.id} after ${first.id}`);
    const ordered = await instant.ds.query<{ task_id: string }[]>(
      `SELECT task_id FROM a2a_tasks WHERE task_id IN ($1, $2) ORDER BY task_id`,
      [second.id, first.id],
    );
    assert.deepEqual(
      ordered.map((r) => r.task_id),
      [first.id, second.id],
    );
    const own = send('in my context');
    own.message.contextId = 'my-own-context';
    const mine = await handler.sendMessage(ctx, own);
    assert.match(mine.id, V7);
    assert.equal(mine.contextId, 'my-own-context');
  });

  it('a turn that outlasts the creation statement appends after it: two transactions, the same log', async () => {
    const slow = await startEngine({ ARBITER_ECHO_DELAY_MS: '5' });
    try {
      const ctx = await ctxOf(slow);
      const task = await slow.app.get(A2aRequestHandler).sendMessage(ctx, send('one two three four'));
      assert.equal(task.state, 'TASK_STATE_COMPLETED');
      const { row, events } = await writers(slow, task.id);
      assert.ok(events.length >= 2, `events written by ${events.length} transaction(s)`);
      assert.ok(!events.includes(row) || events.length > 1);
      const seqs = await slow.ds.query<{ seq: number }[]>(
        `SELECT seq FROM task_events WHERE task_id = $1 ORDER BY seq`,
        [task.id],
      );
      assert.deepEqual(
        seqs.map((s) => s.seq),
        Array.from({ length: task.lastSeq }, (_, i) => i + 1),
      );
    } finally {
      await slow.close();
    }
  });

  it("a new task's stream follows its run from the moment it started: no read of the log, nothing missed", async () => {
    const slow = await startEngine({ ARBITER_ECHO_DELAY_MS: '3' });
    try {
      for (const engine of [instant, slow]) {
        const repo = engine.app.get(EventReads);
        let reads = 0;
        const read = repo.events.bind(repo);
        repo.events = (...args) => {
          reads++;
          return read(...args);
        };
        try {
          const ctx = await ctxOf(engine);
          const stream = await engine.app.get(A2aRequestHandler).sendStreamingMessage(ctx, send('a b c d e f g h'));
          const items: StreamItem[] = [];
          for await (const item of stream.items) items.push(item);
          stream.release();
          assert.equal(items[0]?.type, 'task');
          const seqs = items.flatMap((i) => (i.type === 'event' ? [i.event.seq] : []));
          assert.deepEqual(
            seqs,
            Array.from({ length: seqs.length }, (_, k) => k + 4),
            'every event after the task, in order',
          );
          const last = items.at(-1);
          assert.ok(last?.type === 'event' && last.final && last.event.kind === 'status');
          assert.equal(last.event.payload.state, 'TASK_STATE_COMPLETED');
          assert.equal(reads, 0, 'the stream read nothing from the log');
        } finally {
          repo.events = read;
        }
      }
    } finally {
      await slow.close();
    }
  });

  it('a resent messageId gets the first task; the abandoned run wrote nothing', async () => {
    const ctx = await ctxOf(instant);
    const handler = instant.app.get(A2aRequestHandler);
    const params = send('only once');
    const [a, b] = await Promise.all([handler.sendMessage(ctx, params), handler.sendMessage(ctx, params)]);
    assert.equal(a.id, b.id);
    const [count] = await instant.ds.query<{ n: string }[]>(
      `SELECT count(*) AS n FROM a2a_tasks WHERE tenant_id = $1`,
      [ctx.principal.tenantId],
    );
    assert.equal(Number(count?.n), 1);
  });

  it(
    'nothing leaves the process before the task is stored: neither the model request nor a tool (echo /fetch)',
    { skip: !REAL_POSTGRES && 'needs a PostgreSQL server (holding a table lock needs a second database session)' },
    async () => {
      const catalog = instant.app.get(AgentCatalog);
      const ctx = await ctxOf(instant);
      await catalog.create(ctx.principal.tenantId, { id: 'outside', model: 'openai/gated-m', role: 'r', goal: 'g' });
      const outside = (await catalog.resolve(ctx.principal.tenantId, 'outside'))!;
      fake.scripts.set('gated-m', () => 'from the model');
      const handler = instant.app.get(A2aRequestHandler);
      const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/x`;
      // A session that holds the task table: every creation waits for it.
      const runner = instant.ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.query(`LOCK TABLE a2a_tasks IN SHARE MODE`);
      const requestsBefore = fake.requests.length;
      const hitsBefore = pageHits;
      const model = handler.sendMessage({ ...ctx, agent: outside }, send('hello'));
      const tool = handler.sendMessage(ctx, send(`/fetch ${pageUrl}`));
      await new Promise((r) => setTimeout(r, 400));
      const waited = { requests: fake.requests.length - requestsBefore, hits: pageHits - hitsBefore };
      await runner.commitTransaction();
      await runner.release();
      assert.deepEqual(waited, { requests: 0, hits: 0 }, 'nothing was called while the creation waited');
      const [m, t] = await Promise.all([model, tool]);
      assert.equal(m.state, 'TASK_STATE_COMPLETED');
      assert.equal(t.state, 'TASK_STATE_COMPLETED');
      assert.equal(fake.requests.length - requestsBefore, 1);
      assert.equal(pageHits - hitsBefore, 1);
    },
  );
});
