import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Artifact, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import {
  protoArtifact,
  protoArtifactUpdate,
  protoMessage,
  protoPart,
  protoStatusUpdate,
  protoTask,
} from '../../src/a2a-wire/dialects/proto-json.js';

type J = Record<string, unknown>;

/** A small deterministic generator (mulberry32), so a failure names a case that can be run again. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Values a field may hold, ordinary and odd: what a stored task holds and what a careless writer might. */
function valueGen(r: () => number) {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const maybe = <T>(v: () => T, p = 0.6): T | undefined => (r() < p ? v() : undefined);
  const str = () => pick(['', 'x', 'a-b', 'ünï', '0', ' ', 'TASK_STATE_WORKING', 'long text '.repeat(3)]);
  const anyScalar = () => pick<unknown>([null, undefined, '', 'x', 0, 1, 2, 7, -1, 2.5, true, false, 'UNRECOGNIZED']);
  const metadata = () => pick<unknown>([{}, { a: 1 }, { 'x-arbiter.error': 'boom' }, [], null, 'text', 3]);
  const b64 = () =>
    pick(['aGVsbG8=', 'aGVsbG8', 'aGV sbG8=', '_-8=', '', '!!', Buffer.from('héllo').toString('base64')]);
  const part = (): J => {
    const p: J = {};
    const content = pick(['text', 'raw', 'url', 'data', 'two', 'none']);
    if (content === 'text' || content === 'two') p.text = pick<unknown>(['hi', '', 0, null]);
    if (content === 'raw' || content === 'two') p.raw = b64();
    if (content === 'url') p.url = pick<unknown>(['https://x/y', '', 5]);
    if (content === 'data') p.data = pick<unknown>([{ k: [1, 2] }, [], 0, false, 'd', null]);
    if (r() < 0.3) p.metadata = metadata();
    if (r() < 0.3) p.filename = pick<unknown>(['f.txt', '', null, 1]);
    if (r() < 0.2) p.mediaType = pick<unknown>(['text/plain', '', null]);
    if (r() < 0.2) p.media_type = pick<unknown>(['image/png', '']);
    return p;
  };
  const list = <T>(of: () => T): unknown => pick<unknown>([[], [of()], [of(), of()], undefined, null, 'not a list']);
  const message = (): J => {
    const m: J = {};
    for (const [json, proto] of [
      ['messageId', 'message_id'],
      ['contextId', 'context_id'],
      ['taskId', 'task_id'],
    ]) {
      if (r() < 0.6) m[json] = pick<unknown>([str(), null, 7]);
      if (r() < 0.2) m[proto] = str();
    }
    m.role = maybe(() => pick<unknown>(['ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED', 1, 2, 0, 3, 'user', -1]));
    m.parts = list(part);
    if (r() < 0.3) m.metadata = metadata();
    if (r() < 0.3) m.extensions = list(() => pick<unknown>(['e', 1, '']));
    if (r() < 0.3) m.referenceTaskIds = list(() => 't');
    if (r() < 0.2) m.reference_task_ids = list(() => 'u');
    return m;
  };
  const artifact = (): J => {
    const a: J = {};
    if (r() < 0.8) a.artifactId = pick<unknown>(['a1', '', null]);
    if (r() < 0.2) a.artifact_id = 'a2';
    if (r() < 0.4) a.name = pick<unknown>(['response', '', 3]);
    if (r() < 0.3) a.description = pick<unknown>(['d', '']);
    a.parts = list(part);
    if (r() < 0.3) a.metadata = metadata();
    if (r() < 0.3) a.extensions = list(() => 'e');
    return a;
  };
  const status = (): J => {
    const s: J = {};
    s.state = maybe(() =>
      pick<unknown>(['TASK_STATE_COMPLETED', 'TASK_STATE_WORKING', 'TASK_STATE_UNSPECIFIED', 0, 3, 9, 'done', 4]),
    );
    if (r() < 0.5) s.message = pick<unknown>([message(), null]);
    s.timestamp = maybe(() => pick<unknown>(['2026-11-27T13:00:00.000Z', '', 0]));
    return s;
  };
  const task = (): J => {
    const t: J = {};
    if (r() < 0.9) t.id = pick<unknown>(['t1', '', null]);
    if (r() < 0.8) t.contextId = pick<unknown>(['c1', '']);
    if (r() < 0.2) t.context_id = 'c2';
    if (r() < 0.9) t.status = pick<unknown>([status(), status(), null, {}]);
    t.artifacts = list(artifact);
    t.history = list(message);
    if (r() < 0.7) t.metadata = metadata();
    return t;
  };
  const update = (): J => {
    const u: J = { taskId: pick<unknown>(['t1', '', null]), contextId: pick<unknown>(['c1', '']) };
    if (r() < 0.2) u.task_id = 't2';
    if (r() < 0.2) u.context_id = 'c2';
    if (r() < 0.3) u.metadata = metadata();
    return u;
  };
  return { part, message, artifact, status, task, update, anyScalar, pick };
}

/** The same output, key order included. */
function same(ours: unknown, codec: unknown, what: string): void {
  assert.equal(JSON.stringify(ours), JSON.stringify(codec), what);
  assert.deepEqual(ours, codec, what);
}

describe('ProtoJSON of answers', () => {
  it('is what the SDK codec writes, for a corpus of ordinary and odd tasks, messages, parts and updates', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const g = valueGen(rng(seed));
      const t = g.task();
      same(protoTask(t), Task.toJSON(Task.fromJSON(t)), `task, seed ${seed}`);
      const m = g.message();
      same(protoMessage(m), Message.toJSON(Message.fromJSON(m)), `message, seed ${seed}`);
      const p = g.part();
      same(protoPart(p), Part.toJSON(Part.fromJSON(p)), `part, seed ${seed}`);
      const a = g.artifact();
      same(protoArtifact(a), Artifact.toJSON(Artifact.fromJSON(a)), `artifact, seed ${seed}`);
      const s = { ...g.update(), status: g.status() };
      same(
        { statusUpdate: protoStatusUpdate(s) },
        StreamResponse.toJSON(StreamResponse.fromJSON({ statusUpdate: s })),
        `status update, seed ${seed}`,
      );
      const u: J = { ...g.update(), artifact: g.artifact(), append: g.anyScalar(), lastChunk: g.anyScalar() };
      if (seed % 3 === 0) u.last_chunk = g.anyScalar();
      same(
        { artifactUpdate: protoArtifactUpdate(u) },
        StreamResponse.toJSON(StreamResponse.fromJSON({ artifactUpdate: u })),
        `artifact update, seed ${seed}`,
      );
    }
  });

  it('a completed task as the server answers it: every field in the codec’s order', () => {
    const t = {
      id: 't',
      contextId: 'c',
      status: {
        state: 'TASK_STATE_COMPLETED',
        message: { messageId: 'm2', role: 'ROLE_AGENT', parts: [{ text: 'hi' }], contextId: 'c', taskId: 't' },
        timestamp: '2026-11-27T13:00:00.000Z',
      },
      metadata: { 'x-arbiter': { agent: 'a' } },
      artifacts: [{ artifactId: 'r', name: 'response', parts: [{ text: 'hi' }] }],
      history: [
        { role: 'ROLE_USER', parts: [{ raw: 'aGVsbG8', mediaType: 'text/plain', filename: 'f' }], messageId: 'm1' },
      ],
    };
    const out = protoTask(t);
    assert.deepEqual(Object.keys(out), ['id', 'contextId', 'status', 'artifacts', 'history', 'metadata']);
    // Bytes as canonical base64, padding restored.
    assert.equal((out.history as J[])[0].parts && ((out.history as J[])[0].parts as J[])[0].raw, 'aGVsbG8=');
    same(out, Task.toJSON(Task.fromJSON(t)), 'completed task');
  });
});
