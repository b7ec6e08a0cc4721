import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { extend } from '../../src/common/extend.js';

// V8's own view of an object's shape: whether two objects share a map (what an inline cache keys on). Its
// natives syntax only compiles from source, hence the Function constructor.
setFlagsFromString('--allow-natives-syntax');
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const fast = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean;

interface Ctx {
  tenantId: string;
  agent: { id: string };
  history?: string[];
  taskId?: string;
  contextId?: string;
}

describe('extend', () => {
  it('copies the base, then sets the new properties, in the order a spread gives; the base is unchanged', () => {
    const base: Ctx = { tenantId: 't', agent: { id: 'a' }, taskId: 'old' };
    const copy = extend(base, { taskId: 'new', contextId: 'c' });
    assert.deepEqual(copy, { ...base, ...{ taskId: 'new', contextId: 'c' } });
    assert.deepEqual(Object.keys(copy), ['tenantId', 'agent', 'taskId', 'contextId']);
    assert.notEqual(copy, base);
    assert.equal(copy.agent, base.agent, 'a shallow copy');
    assert.deepEqual(base, { tenantId: 't', agent: { id: 'a' }, taskId: 'old' });
  });

  it('keeps an own __proto__ key as a key, as a spread does, and leaves the prototype alone', () => {
    const base = JSON.parse('{"__proto__": {"polluted": true}, "text": "a"}') as { text: string };
    const copy = extend(base, { text: 'ab' });
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.deepEqual(Object.keys(copy), ['__proto__', 'text']);
    assert.equal((copy as { polluted?: boolean }).polluted, undefined);
    assert.equal(copy.text, 'ab');
    const more = JSON.parse('{"__proto__": {"polluted": true}, "text": "b"}') as { text: string };
    const other = extend({ text: 'a' }, more);
    assert.equal(Object.getPrototypeOf(other), Object.prototype);
    assert.deepEqual(Object.keys(other), ['text', '__proto__']);
  });

  it('gives copies of objects of one shape one map with fast properties, however many are made', () => {
    // On Node 20 a spread followed by more properties stops sharing maps after a few copies: every read of such a
    // copy then misses its inline cache.
    const make = (i: number): Ctx => {
      const base: Ctx = { tenantId: `t${i}`, agent: { id: 'a' } };
      return extend(base, { taskId: `x${i}`, contextId: 'c' });
    };
    const copies = Array.from({ length: 50 }, (_, i) => make(i));
    for (const c of copies) {
      assert.ok(sameMap(c, copies[0]), 'every copy shares the first one’s map');
      assert.ok(fast(c));
    }
  });
});
