// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseWrits, WritScanner } from '../../src/orchestrator/writs.js';

describe('writ scanner', () => {
  it('finds command lines and keeps them out of the visible text', () => {
    const r = parseWrits('Let me check.\n/mem search cats\n/fetch https://example.com/x\nDone soon.');
    assert.equal(r.visible, 'Let me check.\nDone soon.');
    assert.deepEqual(r.writs, [
      { verb: 'mem', args: 'search cats' },
      { verb: 'fetch', args: 'https://example.com/x' },
    ]);
  });

  it('ignores commands inside fenced code blocks', () => {
    const text = 'Example:\n```\n/agent x do it\n```\n~~~\n/mem list\n~~~\n';
    const r = parseWrits(text);
    assert.equal(r.visible, text);
    assert.deepEqual(r.writs, []);
  });

  it('collects block commands up to their terminator, fences included', () => {
    const r = parseWrits(
      'Writing.\n/write notes/a.md\n# Title\n```\n/not a command\n```\n/endwrite\n/parallel\n/agent a one\n\n/agent b two\n/endparallel\nok',
    );
    assert.equal(r.visible, 'Writing.\nok');
    assert.deepEqual(r.writs, [
      { verb: 'write', args: 'notes/a.md', body: '# Title\n```\n/not a command\n```' },
      { verb: 'parallel', args: '', body: '/agent a one\n\n/agent b two' },
    ]);
  });

  it('reports an unterminated block instead of dropping it', () => {
    const r = parseWrits('/write a.txt\nhello');
    assert.equal(r.writs.length, 1);
    assert.equal(r.writs[0]?.body, 'hello');
    assert.match(r.writs[0]?.error ?? '', /unterminated \/write block/);
  });

  it('treats lines that only look like commands as text', () => {
    const r = parseWrits('/usr/bin/env is a path\n  /Agent no\nx /agent not at line start');
    assert.equal(r.visible, '/usr/bin/env is a path\n  /Agent no\nx /agent not at line start');
    assert.deepEqual(r.writs, []);
  });

  it('accepts indented commands and CRLF line ends', () => {
    const r = parseWrits('  /mem add milk\r\nbye\r\n');
    assert.deepEqual(r.writs, [{ verb: 'mem', args: 'add milk' }]);
    assert.equal(r.visible, 'bye\r\n');
  });

  it('streams visible text at once and holds back only command lines, whatever the chunking', () => {
    const text = 'Hello there\n/agent helper find it\nand then\n   \n/write x\nbody\n/endwrite\nbye';
    const whole = parseWrits(text);
    for (const size of [1, 2, 3, 7, 100]) {
      const s = new WritScanner();
      let shown = '';
      const early: string[] = [];
      for (let i = 0; i < text.length; i += size) {
        const out = s.push(text.slice(i, i + size));
        shown += out;
        early.push(out);
      }
      const end = s.end();
      shown += end.tail;
      assert.equal(shown, whole.visible, `chunk size ${size}`);
      assert.deepEqual(end.writs, whole.writs, `chunk size ${size}`);
      assert.ok(!shown.includes('/agent'));
    }
    // The same for fences, indentation, blank lines before a command, CRLF and unicode, at every chunking.
    for (const other of [
      '  \t  /mem add x\r\n  text after blanks\n```\n/agent no\n```\n\u00a0/fetch http://a\nend',
      '\n\n   \n/parallel\n/agent a x\n/endparallel\n  \u{1F600} emoji line\n/usr/bin not a command',
      '/write a\nunterminated\n  ',
    ]) {
      const ref = parseWrits(other);
      for (const size of [1, 2, 5, 11]) {
        const s = new WritScanner();
        let shown = '';
        for (let i = 0; i < other.length; i += size) shown += s.push(other.slice(i, i + size));
        const end = s.end();
        assert.equal(shown + end.tail, ref.visible, `${JSON.stringify(other)} by ${size}`);
        assert.deepEqual(end.writs, ref.writs, `${JSON.stringify(other)} by ${size}`);
      }
    }
    // Ordinary text is released before its line ends.
    const s = new WritScanner();
    assert.equal(s.push('Hel'), 'Hel');
    assert.equal(s.push('lo\n/ag'), 'lo\n');
    assert.equal(s.push('ent a b\nnext'), 'next');
  });
});
