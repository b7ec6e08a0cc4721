import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeArtifact } from '../../src/native-api/native-events.js';
import { messageText, RunEventMapper, storable, turnsIn } from '../../src/tasks/runs/run-event-mapper.js';
import type { ArtifactJson } from '../../src/common/a2a-json.js';
import type { TaskEventBody } from '../../src/tasks/task-events.js';

const artifactOf = (e: TaskEventBody | undefined): ArtifactJson => {
  assert.equal(e?.kind, 'artifact');
  return e.payload.artifact;
};

describe('run-event mapper', () => {
  const ctx = { taskId: 't1', contextId: 'c1' };

  it('text chunks append to the turn’s response artifact; a sub-agent’s text is a text event', () => {
    const m = new RunEventMapper(ctx, 0, { input: 0, output: 0 });
    const a = m.map({ type: 'text', delta: 'Hel' });
    const b = m.map({ type: 'text', delta: 'lo' });
    assert.equal(m.map({ type: 'text', delta: '' }), undefined, 'empty chunks write nothing');
    assert.deepEqual(a, {
      kind: 'artifact',
      payload: {
        artifact: { artifactId: 't1-text-0', name: 'response', parts: [{ text: 'Hel' }] },
        append: false,
        lastChunk: false,
      },
    });
    assert.equal(b?.kind === 'artifact' && b.payload.append, true);
    assert.deepEqual(m.map({ type: 'text', delta: 'x', depth: 1, agent: 'helper' }), {
      kind: 'text',
      payload: { depth: 1, agent: 'helper', delta: 'x' },
    });
    assert.equal(m.closing().length, 1, 'a turn with text closes its artifact');
    m.nextTurn();
    assert.deepEqual(m.closing(), [], 'a turn without text has nothing to close');
    assert.equal(artifactOf(m.map({ type: 'text', delta: 'next' })).artifactId, 't1-text-1');
  });

  it('usage is cumulative over the task: the run adds to what earlier runs used', () => {
    const m = new RunEventMapper(ctx, 0, { input: 10, output: 5 });
    assert.deepEqual(m.map({ type: 'usage', inputTokens: 3, outputTokens: 2 }), {
      kind: 'usage',
      payload: { inputTokens: 13, outputTokens: 7 },
    });
    assert.deepEqual(m.tokens, { input: 13, output: 7 });
  });

  it('tool calls, files and sub-agent replies decode back to what the run emitted', () => {
    const m = new RunEventMapper(ctx, 2, { input: 0, output: 0 });
    const tool = artifactOf(
      m.map({
        type: 'tool_call',
        tool: 'a2a',
        args: 'call x',
        ok: true,
        depth: 1,
        agent: 'helper',
        detail: { remote_task_id: 'r1' },
      }),
    );
    assert.deepEqual(decodeArtifact('t1', 'index', tool), {
      kind: 'tool_call',
      tool: 'a2a',
      ok: true,
      args: 'call x',
      detail: { remote_task_id: 'r1' },
      depth: 1,
      agent: 'helper',
    });
    const file = decodeArtifact(
      't1',
      'index',
      artifactOf(
        m.map({ type: 'file', path: 'a.md', content: 'hi ✓', mediaType: 'text/markdown', depth: 0, agent: 'index' }),
      ),
    );
    assert.equal(file.kind, 'file');
    assert.equal(file.kind === 'file' && file.bytes.toString('utf8'), 'hi ✓');
    const sub = decodeArtifact(
      't1',
      'index',
      artifactOf(m.map({ type: 'sub_agent_response', agent: 'helper', depth: 1, content: 'done' })),
    );
    assert.deepEqual(sub, { kind: 'sub_agent', agent: 'helper', depth: 1, content: 'done' });
    assert.deepEqual(
      decodeArtifact('t1', 'index', { artifactId: 't1-text-0', parts: [{ text: 'a' }, { text: 'b' }] }),
      {
        kind: 'response',
        text: 'ab',
      },
    );
    assert.deepEqual(decodeArtifact('t1', 'index', { artifactId: 'remote', parts: [] }), { kind: 'other' });
    assert.equal(
      turnsIn('t1', [{ artifactId: 't1-text-0', parts: [] }, tool, { artifactId: 't1-text-1', parts: [] }]),
      2,
    );
  });

  it('replies and questions are agent messages of the task; model text is made storable', () => {
    const m = new RunEventMapper(ctx, 3, { input: 0, output: 0 });
    assert.deepEqual(m.reply('ok\u0000'), {
      messageId: 't1-r3',
      role: 'ROLE_AGENT',
      parts: [{ text: 'ok\uFFFD' }],
      contextId: 'c1',
      taskId: 't1',
    });
    assert.equal(m.question('why?').messageId, 't1-q3');
    assert.equal(storable('a\uD800b'), 'a\uFFFDb');
  });

  it('the model sees text, data as JSON and text files with a header line', () => {
    const text = messageText({
      messageId: 'm',
      role: 'ROLE_USER',
      parts: [
        { text: 'look:' },
        { data: { a: 1 } },
        { raw: Buffer.from('file body').toString('base64'), filename: 'n.txt', mediaType: 'text/plain' },
      ],
    });
    assert.equal(text, 'look:\n{"a":1}\n[file n.txt (text/plain)]\nfile body');
  });
});
