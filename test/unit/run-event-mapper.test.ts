// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeArtifact } from '../../src/native-api/native-events.js';
import { storable } from '../../src/common/text.js';
import { messageText, RunEventMapper, turnsIn } from '../../src/tasks/runs/run-event-mapper.js';
import type { ArtifactJson } from '../../src/common/a2a-json.js';
import type { TaskEventBody } from '../../src/tasks/task-events.js';
import { artifactWithBytes, fileRefOf, storeFiles } from '../../src/tasks/task-files.js';

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
    // A written file: the log's part refers to the stored file; reads put its bytes back.
    const written = m.file({
      type: 'file',
      path: 'a.bin',
      bytes: Buffer.from([0, 1, 2, 255]),
      mediaType: 'application/octet-stream',
      depth: 0,
      agent: 'index',
    });
    const stored = artifactOf(written.event);
    assert.equal(stored.parts[0]?.raw, undefined, 'no bytes in the log');
    assert.deepEqual(fileRefOf(stored.parts[0] ?? {}), { id: written.file.id, size: 4 });
    assert.equal(written.file.b64, Buffer.from([0, 1, 2, 255]).toString('base64'));
    const back = artifactWithBytes(stored, new Map([[written.file.id, Buffer.from([0, 1, 2, 255])]]));
    assert.deepEqual(back.parts, [{ raw: 'AAEC/w==', filename: 'a.bin', mediaType: 'application/octet-stream' }]);
    const file = decodeArtifact('t1', 'index', back);
    assert.equal(file.kind, 'file');
    assert.deepEqual(file.kind === 'file' && [...file.bytes], [0, 1, 2, 255]);
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

  it('stored files: bytes leave the message, the model sees name, type and size; small text stays inline', () => {
    const pdf = Buffer.from('%PDF-1.7\n\u0000\u00ff binary');
    const { message, files } = storeFiles(
      {
        messageId: 'm',
        role: 'ROLE_USER',
        parts: [
          { text: 'see', metadata: { 'x-arbiter.file_ref': { id: '00000000-0000-4000-8000-000000000000', size: 1 } } },
          { raw: pdf.toString('base64'), filename: 'report.pdf', mediaType: 'application/pdf', metadata: { k: 1 } },
          { raw: Buffer.from('small text').toString('base64'), filename: 'n.txt', mediaType: 'text/plain' },
          { raw: Buffer.from('a\u0000b').toString('base64'), filename: 'nul.txt', mediaType: 'text/plain' },
          { url: 'https://example.com/x.png', filename: 'x.png', mediaType: 'image/png' },
        ],
      },
      1024,
    );
    assert.equal(files.length, 2, 'the PDF and the text file with a NUL byte are stored');
    assert.deepEqual(message.parts[0], { text: 'see' }, "a client's reference key is dropped");
    assert.equal(message.parts[1]?.raw, undefined);
    assert.equal(files[0]?.size, pdf.length);
    assert.equal(files[0]?.mediaType, 'application/pdf');
    assert.equal(
      messageText(message),
      [
        'see',
        `[file: report.pdf, application/pdf, ${pdf.length} bytes]`,
        '[file n.txt (text/plain)]\nsmall text',
        '[file: nul.txt, text/plain, 3 bytes]',
        '[file: x.png, image/png, at https://example.com/x.png (not fetched)]',
      ].join('\n'),
    );
    assert.ok(!messageText(message).includes('PDF-1.7'), 'never the bytes');
    const bytes = new Map(files.map((f) => [f.id, Buffer.from(f.b64, 'base64')]));
    const back = artifactWithBytes({ artifactId: 'a', parts: message.parts }, bytes).parts;
    assert.deepEqual(back[1], {
      raw: pdf.toString('base64'),
      filename: 'report.pdf',
      mediaType: 'application/pdf',
      metadata: { k: 1 },
    });
  });
});
