import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import type { SendParams, StreamItem } from '../../src/a2a-wire/dialects/dialect.js';
import { A2aRequestHandler, type CallContext } from '../../src/a2a-inbound/handler/a2a-request-handler.js';
import { AgentCatalog } from '../../src/registry/services/agent-catalog.service.js';
import { TaskError } from '../../src/tasks/task.errors.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine, tenantPrincipal } from '../helpers/engine.js';
import { waitFor } from '../helpers/a2a.js';

const send = (text: string, extra: Partial<SendParams> = {}, taskId?: string): SendParams => ({
  message: {
    messageId: crypto.randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text }],
    ...(taskId ? { taskId } : {}),
  },
  returnImmediately: false,
  ...extra,
});

async function collect(items: AsyncIterable<StreamItem>): Promise<StreamItem[]> {
  const out: StreamItem[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/**
 * The A2A request handler against the real engine (no HTTP server): the
 * operations of spec §3.1 as internal calls, tasks in the database.
 */
describe(`A2A request handler (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let handler: A2aRequestHandler;
  let ctx: CallContext;
  let other: CallContext;
  before(async () => {
    engine = await startEngine({ ARBITER_ECHO_DELAY_MS: '1', ARBITER_SHUTDOWN_GRACE_MS: '100' });
    handler = engine.app.get(A2aRequestHandler);
    const catalog = engine.app.get(AgentCatalog);
    const [t1, t2] = [await engine.newTenant(), await engine.newTenant()];
    const index = await catalog.resolve(t1, 'index');
    ctx = {
      principal: tenantPrincipal(t1, 't1', 'x'),
      agent: index!,
      signal: new AbortController().signal,
    };
    other = { ...ctx, principal: tenantPrincipal(t2, 't2', 'y') };
  });
  after(() => engine.close());

  it('§3.1.1 a blocking send returns the completed task; returnImmediately returns it working', async () => {
    const done = await handler.sendMessage(ctx, send('hello there'));
    assert.equal(done.state, 'TASK_STATE_COMPLETED');
    assert.equal(done.statusMessage?.parts[0]?.text, 'hello there');
    assert.deepEqual(
      done.artifacts.map((a) => a.parts.map((p) => p.text).join('')),
      ['hello there'],
    );
    const now = await handler.sendMessage(ctx, send('later', { returnImmediately: true }));
    assert.equal(now.state, 'TASK_STATE_WORKING');
  });

  it('§3.1.2 a stream is the task, then its events in order, ending at the settled status', async () => {
    const stream = await handler.sendStreamingMessage(ctx, send('one two three'));
    const items = await collect(stream.items);
    assert.equal(items[0]?.type, 'task');
    const events = items.flatMap((i) => (i.type === 'event' ? [i] : []));
    const seqs = events.map((e) => e.event.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((x, y) => x - y),
      'in log order',
    );
    const last = events.at(-1)!;
    assert.equal(last.final, true);
    assert.equal(last.event.kind === 'status' && last.event.payload.state, 'TASK_STATE_COMPLETED');
  });

  it('an interrupted task continues with the next message; a terminal one refuses it', async () => {
    const asked = await handler.sendMessage(ctx, send('ask'));
    assert.equal(asked.state, 'TASK_STATE_INPUT_REQUIRED');
    const answered = await handler.sendMessage(ctx, send('forty-two', {}, asked.id));
    assert.equal(answered.state, 'TASK_STATE_COMPLETED');
    assert.equal(answered.statusMessage?.parts[0]?.text, 'forty-two');
    await assert.rejects(
      handler.sendMessage(ctx, send('more', {}, asked.id)),
      (e) => e instanceof TaskError && e.reason === 'task_terminal',
    );
  });

  it('a streaming continuation ends at the status written after its message, however fast the run settles', async () => {
    let task = await handler.sendMessage(ctx, send('ask'));
    for (let i = 0; i < 5; i++) {
      // Each answer asks again at once: the run may settle before the stream reads the task.
      const items = await collect((await handler.sendStreamingMessage(ctx, send('ask', {}, task.id))).items);
      const last = items.at(-1)!;
      const state = last.type === 'task' ? last.task.state : last.event.kind === 'status' && last.event.payload.state;
      assert.equal(state, 'TASK_STATE_INPUT_REQUIRED');
      task = await handler.getTask(ctx, { id: task.id });
    }
  });

  it('a message sent while the turn runs reaches it (hold, then continue)', async () => {
    const held = await handler.sendMessage(ctx, send('hold', { returnImmediately: true }));
    const reply = await handler.sendMessage(ctx, send('released', {}, held.id));
    assert.equal(reply.state, 'TASK_STATE_COMPLETED');
    assert.equal(reply.statusMessage?.parts[0]?.text, 'released');
  });

  it('§3.1.5 cancel ends a running task once; §3.1.6 a terminal task cannot be subscribed to (v0.3 replays its end)', async () => {
    const held = await handler.sendMessage(ctx, send('hold', { returnImmediately: true }));
    const canceled = await handler.cancelTask(ctx, { id: held.id });
    assert.equal(canceled.state, 'TASK_STATE_CANCELED');
    await assert.rejects(
      handler.cancelTask(ctx, { id: held.id }),
      (e) => e instanceof TaskError && e.reason === 'task_not_cancelable',
    );
    await assert.rejects(
      handler.subscribeToTask(ctx, { id: held.id }, false),
      (e) => e instanceof A2aError && e.reason === 'unsupported_operation',
    );
    const replay = await collect((await handler.subscribeToTask(ctx, { id: held.id }, true)).items);
    assert.equal(replay.length, 1);
    assert.equal(replay[0]?.type === 'event' && replay[0].final, true);
  });

  it('a blocking send gives up when its caller goes away; the task goes on', async () => {
    const ac = new AbortController();
    const working = async () =>
      (await handler.listTasks(ctx, { pageSize: 100, includeArtifacts: false, state: 'TASK_STATE_WORKING' })).tasks;
    const before = new Set((await working()).map((t) => t.id));
    const waiting = handler.sendMessage({ ...ctx, signal: ac.signal }, send('hold'));
    // The caller goes away once its task is running (and the send is waiting on it).
    const task = await waitFor(async () => (await working()).find((t) => !before.has(t.id)));
    ac.abort(new Error('client disconnected'));
    await assert.rejects(waiting, /client disconnected/);
    assert.equal((await handler.getTask(ctx, { id: task.id })).state, 'TASK_STATE_WORKING', 'the task goes on');
  });

  it('§3.1.4 lists by page token; another tenant sees nothing of it', async () => {
    const first = await handler.listTasks(ctx, { pageSize: 2, includeArtifacts: false });
    assert.equal(first.tasks.length, 2);
    assert.ok(first.nextPageToken);
    const second = await handler.listTasks(ctx, {
      pageSize: 2,
      includeArtifacts: false,
      pageToken: first.nextPageToken,
    });
    assert.ok(second.tasks.every((t) => !first.tasks.some((f) => f.id === t.id)));
    const id = first.tasks[0].id;
    for (const call of [
      () => handler.getTask(other, { id }),
      () => handler.cancelTask(other, { id }),
      () => handler.subscribeToTask(other, { id }, false),
      () => handler.sendMessage(other, send('sneak', {}, id)),
    ]) {
      await assert.rejects(call(), (e) => e instanceof TaskError && e.reason === 'task_not_found');
    }
    assert.equal((await handler.listTasks(other, { pageSize: 10, includeArtifacts: false })).totalSize, 0);
  });
});
