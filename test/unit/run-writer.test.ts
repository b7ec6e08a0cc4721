import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventLog } from '../../src/tasks/event-log/event-log.service.js';
import type { Appended, TaskRowChange } from '../../src/tasks/repositories/task-log.types.js';
import type { TaskEventBody } from '../../src/tasks/task-events.js';
import type { NewTaskFile } from '../../src/tasks/task-files.js';
import type { MessageJson } from '../../src/common/a2a-json.js';
import {
  MAX_QUEUED_EVENTS,
  mergeChange,
  mergeChunks,
  RunWriteFailed,
  RunWriter,
} from '../../src/tasks/runs/run-writer.js';
import { RunAbort } from '../../src/common/run-abort.js';

const message = (id: string): MessageJson => ({ messageId: id, role: 'ROLE_AGENT', parts: [{ text: id }] });
const status = (id: string): TaskEventBody => ({
  kind: 'status',
  payload: { state: 'TASK_STATE_WORKING', message: message(id), timestamp: '2026-11-26T00:00:00Z' },
});
const file = (id: string): NewTaskFile => ({ id, mediaType: 'text/plain', filename: null, size: 2, b64: 'aGk=' });

/**
 * The log's append as the writer sees it: each call recorded; it commits when `release` is called, and fails
 * with the error given to `fail` until that is called without one.
 */
function recordingLog() {
  const calls: { events: TaskEventBody[]; change?: TaskRowChange }[] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> | undefined;
  let failure: Error | undefined;
  const log = {
    append: async (_taskId: string, events: TaskEventBody[], change?: TaskRowChange): Promise<Appended> => {
      calls.push({ events, change });
      if (gate) await gate;
      if (failure) throw failure;
      return { events: [] };
    },
  } as unknown as EventLog;
  return {
    log,
    calls,
    fail: (err?: Error) => {
      failure = err;
    },
    hold: () => {
      gate = new Promise((r) => (release = r));
    },
    release: () => {
      gate = undefined;
      release();
    },
  };
}

describe('the run writer queues events with the row change they make', () => {
  it('merges changes: a later status message wins, metadata merges, files add up', () => {
    const merged = mergeChange(
      { statusMessage: message('a'), metadata: { x: 1, y: 1 }, files: [file('f1')] },
      { metadata: { y: 2 }, files: [file('f2')] },
    );
    assert.equal(merged.statusMessage?.messageId, 'a');
    assert.deepEqual(merged.metadata, { x: 1, y: 2 });
    assert.deepEqual(
      merged.files?.map((f) => f.id),
      ['f1', 'f2'],
    );
    assert.equal(
      mergeChange({ statusMessage: message('a') }, { statusMessage: message('b') }).statusMessage?.messageId,
      'b',
    );
    assert.deepEqual(mergeChange<TaskRowChange>({}, { state: 'TASK_STATE_COMPLETED' }), {
      state: 'TASK_STATE_COMPLETED',
    });
  });

  it('what is queued at once goes out in one statement with its merged change, owner-conditional', async () => {
    const r = recordingLog();
    const w = new RunWriter('t1', r.log, 'replica-1');
    w.queue([], { metadata: { 'x-arbiter.upstream_task_id': 'up-1' } });
    w.queue([status('s1')], { statusMessage: message('s1') });
    w.queue([status('s2')], { statusMessage: message('s2') });
    await w.flush();
    assert.equal(r.calls.length, 1);
    assert.deepEqual(
      r.calls[0].events.map((e) => (e.kind === 'status' ? e.payload.message?.messageId : e.kind)),
      ['s1', 's2'],
    );
    assert.equal(r.calls[0].change?.statusMessage?.messageId, 's2');
    assert.deepEqual(r.calls[0].change?.metadata, { 'x-arbiter.upstream_task_id': 'up-1' });
    assert.equal(r.calls[0].change?.owner, 'replica-1');
  });

  it('queued events are written once: on the next macrotask, at once when flushed, or by a final write', async () => {
    const macrotask = () => new Promise((r) => setImmediate(r));
    const ids = (call: { events: TaskEventBody[] }) =>
      call.events.map((e) => (e.kind === 'status' ? e.payload.message?.messageId : e.kind));
    // Left alone: written after the current macrotask, together with what was queued meanwhile.
    const left = recordingLog();
    const a = new RunWriter('t1', left.log);
    a.queue([status('s1')]);
    await Promise.resolve();
    a.queue([status('s2')]);
    assert.equal(left.calls.length, 0);
    await macrotask();
    await a.flush();
    assert.deepEqual(left.calls.map(ids), [['s1', 's2']]);
    // Flushed before the macrotask: written at once, and the macrotask's turn writes nothing more.
    const flushed = recordingLog();
    const b = new RunWriter('t1', flushed.log);
    b.queue([status('s1')]);
    await b.flush();
    assert.deepEqual(flushed.calls.map(ids), [['s1']]);
    await macrotask();
    assert.equal(flushed.calls.length, 1);
    // Taken over by a final write: one statement, nothing after it.
    const taken = recordingLog();
    const c = new RunWriter('t1', taken.log);
    c.queue([status('s1')]);
    await c.write([status('end')], { state: 'TASK_STATE_COMPLETED' });
    await macrotask();
    assert.deepEqual(taken.calls.map(ids), [['s1', 'end']]);
    // Queued while a write is in flight: the flush waits for both writes, in order.
    const busy = recordingLog();
    const d = new RunWriter('t1', busy.log);
    busy.hold();
    d.queue([status('s1')]);
    await macrotask();
    d.queue([status('s2')]);
    const done = d.flush();
    busy.release();
    await done;
    assert.deepEqual(busy.calls.map(ids), [['s1'], ['s2']]);
  });

  it('a final write takes the queue along; its own status message wins over the queued one', async () => {
    const r = recordingLog();
    const w = new RunWriter('t1', r.log);
    w.queue([status('s1')], { statusMessage: message('s1'), metadata: { m: 1 } });
    await w.write([status('end')], { state: 'TASK_STATE_COMPLETED', statusMessage: message('end') });
    assert.equal(r.calls.length, 1);
    assert.equal(r.calls[0].events.length, 2);
    assert.equal(r.calls[0].change?.statusMessage?.messageId, 'end');
    assert.equal(r.calls[0].change?.state, 'TASK_STATE_COMPLETED');
    assert.deepEqual(r.calls[0].change?.metadata, { m: 1 });
  });

  it('a failed queued write stops the run; then only an end that fails or cancels is written', async () => {
    const away = new Error('connection terminated');
    const r = recordingLog();
    const { calls } = r;
    r.fail(away);
    const abort = new RunAbort();
    const w = new RunWriter('t1', r.log, undefined, abort);
    w.queue([status('s1')]);
    await w.flush();
    assert.ok(abort.reason instanceof RunWriteFailed, 'the run is stopped');
    assert.equal(abort.reason.cause, away, 'for the write’s own error');
    r.fail();
    // Nothing more is queued, and nothing but an end that fails or cancels the task is written.
    w.queue([status('s2')]);
    await w.flush();
    await assert.rejects(w.write([status('done')], { state: 'TASK_STATE_COMPLETED' }), (err) => err === away);
    await assert.rejects(w.write([status('more')], { historyAppend: [message('m')] }), (err) => err === away);
    assert.equal(calls.length, 1, 'only the failed write reached the log');
    await w.write([status('failed')], { state: 'TASK_STATE_FAILED' });
    assert.equal(calls.length, 2);
    assert.deepEqual(
      calls[1].events.map((e) => (e.kind === 'status' ? e.payload.message?.messageId : e.kind)),
      ['failed'],
    );
    // A writer without a run to stop only records the failure.
    const failing = recordingLog();
    failing.fail(away);
    const alone = new RunWriter('t2', failing.log);
    alone.queue([status('s1')]);
    await alone.flush();
    await assert.rejects(alone.write([], { state: 'TASK_STATE_INPUT_REQUIRED' }), (err) => err === away);
  });

  it('a turn’s last chunk and its closing, written together, are one event: the chunk marked last', async () => {
    const chunk = (text: string, append: boolean, lastChunk = false, id = 'a1'): TaskEventBody => ({
      kind: 'artifact',
      payload: { artifact: { artifactId: id, name: 'response', parts: [{ text }] }, append, lastChunk },
    });
    const r = recordingLog();
    const w = new RunWriter('t1', r.log);
    w.queue([chunk('hello', false)]);
    await w.write([chunk('', true, true), status('end')], { state: 'TASK_STATE_COMPLETED' });
    assert.deepEqual(r.calls[0].events, [chunk('hello', false, true), status('end')]);
    // Not merged: another artifact's closing, a closing that carries text or more, or a chunk already last.
    for (const events of [
      [chunk('hello', true), chunk('', true, true, 'a2')],
      [chunk('hello', true), chunk('!', true, true)],
      [chunk('hello', true, true), chunk('', true, true)],
      [
        chunk('hello', true),
        {
          ...chunk('', true, true),
          payload: {
            ...chunk('', true, true).payload,
            artifact: { artifactId: 'a1', name: 'response', parts: [{ text: '' }], metadata: { k: 1 } },
          },
        } as TaskEventBody,
      ],
    ]) {
      assert.equal(mergeChunks(events).length, 2, JSON.stringify(events));
    }
    // Chunks of one artifact queued together are one append; its closing then marks it last.
    assert.deepEqual(mergeChunks([chunk('a', true), chunk('b', true), chunk('', true, true)]), [
      chunk('ab', true, true),
    ]);
    // The turn's token counts between the chunk and its closing (as a model's turn writes them): still one chunk,
    // marked last, the counts after it.
    const usage: TaskEventBody = { kind: 'usage', payload: { inputTokens: 3, outputTokens: 9 } };
    assert.deepEqual(mergeChunks([chunk('hello', false), usage, chunk('', true, true), status('end')]), [
      chunk('hello', false, true),
      usage,
      status('end'),
    ]);
    // Anything else between them keeps the closing apart.
    assert.equal(mergeChunks([chunk('hello', false), status('mid'), chunk('', true, true)]).length, 3);
  });

  it('merges runs of chunks as merging them two at a time did, over generated sequences', () => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const artifact = (id: string, text: string, append: boolean, lastChunk: boolean): TaskEventBody => ({
      kind: 'artifact',
      payload: { artifact: { artifactId: id, name: 'response', parts: [{ text }] }, append, lastChunk },
    });
    const pick = (): TaskEventBody => {
      const id = ['a1', 'a2'][rand(2)];
      switch (rand(8)) {
        case 0:
          return artifact(id, '', true, true); // a bare closing
        case 1:
          return artifact(id, `w${rand(99)} `, rand(2) === 0, rand(4) === 0);
        case 2:
          return { kind: 'usage', payload: { inputTokens: rand(9), outputTokens: rand(9) } };
        case 3:
          return {
            kind: 'usage',
            payload: { inputTokens: 1, outputTokens: 2 },
            calls: [{ n: rand(9) }],
          } as unknown as TaskEventBody;
        case 4:
          return { kind: 'text', payload: { delta: `t${rand(9)}`, depth: 0, agent: 'index' } };
        case 5:
          return status(`s${rand(9)}`);
        default:
          return artifact(id, `c${rand(99)} `, true, false);
      }
    };
    for (let n = 0; n < 500; n++) {
      const events = Array.from({ length: 1 + rand(12) }, pick);
      const copy = structuredClone(events);
      assert.deepEqual(mergeChunks(events), pairwiseMerge(events), JSON.stringify(events));
      assert.deepEqual(events, copy, 'the input is left as it was');
    }
  });

  it('room() waits while the queue is full and a write is in flight, and not otherwise', async () => {
    const r = recordingLog();
    const w = new RunWriter('t1', r.log);
    r.hold();
    w.queue([status('first')]);
    await new Promise((res) => setImmediate(res)); // the background write starts, and waits on the database
    for (let i = 0; i < MAX_QUEUED_EVENTS; i++) w.queue([status(`s${i}`)]);
    let roomy = false;
    const waiting = w.room().then(() => (roomy = true));
    await new Promise((res) => setImmediate(res));
    assert.equal(roomy, false, 'a full queue waits for the database');
    r.release();
    await waiting;
    assert.equal(r.calls.length, 2);
    assert.equal(r.calls[1].events.length, MAX_QUEUED_EVENTS);
    await w.room(); // an empty queue: at once
  });
});

/** `mergeChunks` as it was first written: each chunk merged into the one before it as it comes. */
function pairwiseMerge(events: TaskEventBody[]): TaskEventBody[] {
  const out: TaskEventBody[] = [];
  for (const e of events) {
    const prev = out[out.length - 1];
    if (e.kind === 'artifact' && e.payload.append && e.payload.lastChunk) {
      let i = out.length - 1;
      while (out[i]?.kind === 'usage') i--;
      const chunk = out[i];
      const a = e.payload.artifact;
      if (
        chunk?.kind === 'artifact' &&
        !chunk.payload.lastChunk &&
        a.artifactId === chunk.payload.artifact.artifactId &&
        a.name === chunk.payload.artifact.name &&
        Object.keys(a).every((k) => k === 'artifactId' || k === 'name' || k === 'parts') &&
        a.parts.length === 1 &&
        a.parts[0].text === '' &&
        Object.keys(a.parts[0]).length === 1
      ) {
        out[i] = { kind: 'artifact', payload: { ...chunk.payload, lastChunk: true } };
        continue;
      }
    }
    if (
      prev?.kind === 'artifact' &&
      e.kind === 'artifact' &&
      e.payload.append &&
      !prev.payload.lastChunk &&
      !e.payload.lastChunk &&
      prev.payload.artifact.artifactId === e.payload.artifact.artifactId &&
      prev.payload.artifact.parts.length === 1 &&
      e.payload.artifact.parts.length === 1 &&
      typeof prev.payload.artifact.parts[0]?.text === 'string' &&
      typeof e.payload.artifact.parts[0]?.text === 'string'
    ) {
      const text = prev.payload.artifact.parts[0].text + e.payload.artifact.parts[0].text;
      out[out.length - 1] = {
        kind: 'artifact',
        payload: { ...prev.payload, artifact: { ...prev.payload.artifact, parts: [{ text }] } },
      };
      continue;
    }
    if (
      prev?.kind === 'text' &&
      e.kind === 'text' &&
      prev.payload.depth === e.payload.depth &&
      prev.payload.agent === e.payload.agent
    ) {
      out[out.length - 1] = { kind: 'text', payload: { ...prev.payload, delta: prev.payload.delta + e.payload.delta } };
      continue;
    }
    if (prev?.kind === 'usage' && e.kind === 'usage') {
      const calls = [...(prev.calls ?? []), ...(e.calls ?? [])];
      out[out.length - 1] = calls.length ? { kind: 'usage', payload: e.payload, calls } : e;
      continue;
    }
    out.push(e);
  }
  return out;
}
