import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  JsonTextError,
  LONG_STRING,
  MAX_JSON_DEPTH,
  parseJsonText,
  positionOf,
  scanJson,
  tooDeepAt,
} from '../../src/common/json-guard.js';
import { type EnvelopeError, parseEnvelope } from '../../src/a2a-inbound/jsonrpc/envelope.js';

const refusal = (text: string, opts?: Parameters<typeof parseJsonText>[1]): JsonTextError => {
  try {
    parseJsonText(text, opts);
  } catch (err) {
    assert.ok(err instanceof JsonTextError, String(err));
    return err;
  }
  assert.fail(`accepted ${text.slice(0, 40)}`);
};

/** Runs `fn` with `JSON.parse` refusing to be called: what `fn` decides, it decides before parsing. */
function withoutJsonParse<T>(fn: () => T): T {
  const parse = JSON.parse;
  JSON.parse = () => {
    throw new Error('JSON.parse was called');
  };
  try {
    return fn();
  } finally {
    JSON.parse = parse;
  }
}

const nested = (levels: number, inner = '1'): string => '['.repeat(levels) + inner + ']'.repeat(levels);

describe('JSON texts from outside', () => {
  it('nesting: 64 levels pass, the 65th is refused at its offset; brackets inside strings do not count', () => {
    assert.equal(tooDeepAt(nested(MAX_JSON_DEPTH)), -1);
    assert.equal(tooDeepAt(nested(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH);
    assert.equal(tooDeepAt(`["${'['.repeat(500)}"]`), -1);
    // An escaped quote does not end a string; an escaped backslash before a quote does.
    assert.equal(tooDeepAt(`["\\"${'['.repeat(100)}"]`), -1);
    assert.equal(tooDeepAt(`["\\\\", ${nested(70)}]`), 7 + MAX_JSON_DEPTH - 1);
    assert.equal(tooDeepAt('{"a":{"b":[]}}', 2), 10);
  });

  it('8 MiB of "[" is refused for its depth without JSON.parse ever running', () => {
    const text = '['.repeat(8 * 1024 * 1024);
    const err = withoutJsonParse(() => refusal(text));
    assert.equal(err.kind, 'depth');
    assert.deepEqual(err.at, { offset: 64, line: 1, column: 65 });
    assert.match(err.message, /^body\[0\]\[0\].*… is nested deeper than 64 levels \(line 1, column 65\)$/);
  });

  it('a value too deep is named by its path, as after parsing', () => {
    let deep = '"bottom"';
    for (let i = 0; i < 100; i++) deep = `{"d":${deep}}`;
    const text = `{"jsonrpc":"2.0",\n"params":{"message":{"parts":[{"text":"x"}],"metadata":${deep}}}}`;
    const err = refusal(text, { root: '' });
    assert.match(err.path!, /^params\.message\.metadata\.d\.d\.d/);
    assert.equal(err.at.line, 2);
    // In the JSON-RPC envelope: invalid params naming the field, before parsing.
    const env = withoutJsonParse(() => {
      try {
        parseEnvelope(text);
      } catch (e) {
        return e as EnvelopeError;
      }
      assert.fail('accepted');
    });
    assert.equal(env.error.reason, 'invalid_params');
    assert.match(env.error.message, /params\.message\.metadata\.d/);
    // Too deep outside params: an invalid request (its id cannot be read).
    const byId = withoutJsonParse(() => {
      try {
        parseEnvelope(`{"jsonrpc":"2.0","id":${nested(100)},"method":"GetTask"}`);
      } catch (e) {
        return e as EnvelopeError;
      }
      assert.fail('accepted');
    });
    assert.equal(byId.error.reason, 'invalid_request');
    assert.equal(byId.id, null);
  });

  it('a syntax error says where (line and column) and never quotes the text', () => {
    const secret = 'sk-live-0123456789abcdef';
    const cases: [string, string, number, number][] = [
      [`{"key":"${secret}",\n  "b": }`, 'value expected', 2, 8],
      [`{"key":"${secret}", "b":1,}`, 'property name', 1, 42],
      [`[1,2`, "']' expected", 1, 5],
      [`{"a":tru}`, 'unexpected token', 1, 6],
      [`{"a":1}\n\n  }`, 'end of input expected', 3, 3],
      [`{"a":"x\u0001"}`, 'control character', 1, 6],
      [``, 'value expected', 1, 1],
    ];
    for (const [text, reason, line, column] of cases) {
      const err = refusal(text);
      assert.equal(err.kind, 'syntax');
      assert.ok(err.message.includes(reason), `${err.message} (${JSON.stringify(text)})`);
      assert.deepEqual([err.at.line, err.at.column], [line, column], err.message);
      assert.ok(!err.message.includes(secret));
    }
  });

  it('accepts exactly what JSON.parse accepts (random texts near JSON)', () => {
    const atoms = [
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      '"a"',
      '"\\"',
      '"\\u00e9"',
      '1',
      '-2.5e3',
      'true',
      'null',
      ' ',
      '\n',
      'x',
    ];
    for (let n = 0; n < 3000; n++) {
      let text = '';
      for (let i = randomInt(1, 14); i > 0; i--) text += atoms[randomInt(atoms.length)];
      let expected: unknown;
      let ok = true;
      try {
        expected = JSON.parse(text);
      } catch {
        ok = false;
      }
      if (ok) assert.deepEqual(parseJsonText(text), expected, text);
      else assert.equal(refusal(text).kind, 'syntax', text);
    }
  });

  it('scan: the text besides long strings (where file bytes go) is counted in one pass', () => {
    const file = 'A'.repeat(10 * LONG_STRING);
    const text = JSON.stringify({ raw: file, text: 'short', n: [1, 2] });
    assert.equal(scanJson(text).besidesLongStrings, text.length - file.length);
    assert.equal(scanJson('[[],[],[]]').besidesLongStrings, 10);
  });

  it('positions count lines from 1 and columns in UTF-16 units', () => {
    assert.deepEqual(positionOf('ab\ncd\r\nef', 8), { offset: 8, line: 3, column: 2 });
    assert.deepEqual(positionOf('x', 0), { offset: 0, line: 1, column: 1 });
  });
});
