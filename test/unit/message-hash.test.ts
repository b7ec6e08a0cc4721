import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { MessageJson } from '../../src/common/a2a-json.js';
import { messageHash } from '../../src/tasks/message-hash.js';

/** A message with nested objects, keys in sorted order (the common case), and its hash as stored tasks hold it. */
const SORTED = {
  contextId: 'c',
  extensions: ['e'],
  messageId: 'm1',
  metadata: { a: { c: 2, d: 1 }, b: 'x' },
  parts: [
    { metadata: { a: [true, null, 2.5], z: 1 }, text: 'hello' },
    { mediaType: 'text/plain', url: 'https://x/y' },
  ],
  referenceTaskIds: ['t'],
  role: 'ROLE_USER',
} as unknown as MessageJson;
// Computed with the hash as it was before its keys were sorted in place: a change of the hashed form would make
// every resend of a message stored before it look like a different message.
const STORED_HASH = 'oD_tr935QhCnPyOZ2jnvQhjsiMH-TRwuCcjZwOnU-yY';

/** The hash as first written: every object's defined keys filtered and sorted, the whole text hashed at once. */
function referenceHash(m: Record<string, unknown>): string {
  const { messageId: _id, taskId: _task, ...chosen } = m;
  let text = '';
  const walk = (v: unknown): void => {
    if (v === undefined || v === null) text += 'n';
    else if (typeof v === 'string') text += `s${v.length}:${v}`;
    else if (typeof v === 'number' || typeof v === 'boolean')
      text += `${typeof v === 'number' ? 'd' : 'b'}${String(v)};`;
    else if (Array.isArray(v)) {
      text += `a${v.length}:`;
      for (const item of v) walk(item);
    } else if (typeof v === 'object') {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o)
        .filter((k) => o[k] !== undefined)
        .sort();
      text += `o${keys.length}:`;
      for (const k of keys) {
        walk(k);
        walk(o[k]);
      }
    }
  };
  walk(chosen);
  return createHash('sha256').update(text).digest('base64url');
}

describe('message hash', () => {
  it('is the reference hash for objects of few and many keys, in order or not, with undefined members', () => {
    const few = { role: 'ROLE_USER', parts: [{ text: 'x', metadata: { b: 1, a: undefined, '2': true, '10': null } }] };
    const many = Object.fromEntries(
      Array.from({ length: 30 }, (_, i) => [i % 3 === 0 ? String(30 - i) : `k${(i * 7) % 30}`, i % 5 ? i : undefined]),
    );
    for (const m of [few, { ...few, metadata: many }, { parts: [], role: 'ROLE_USER', contextId: 'c', metadata: {} }]) {
      assert.equal(messageHash(m as unknown as MessageJson), referenceHash(m));
    }
    assert.equal(referenceHash(SORTED as unknown as Record<string, unknown>), STORED_HASH);
  });

  it('is the reference hash for messages longer than the pieces it hashes at once (16 KiB)', () => {
    const text = (n: number, c: string) => c.repeat(n);
    for (const parts of [
      [{ text: text(40_000, 'a') }],
      Array.from({ length: 12 }, (_, i) => ({ text: text(5_000 + i, 'b') })),
      [{ text: text(16 * 1024 - 20, 'c') }, { text: 'd' }, { text: text(16 * 1024, 'e') }],
      Array.from({ length: 3_000 }, (_, i) => ({ text: `p${i}`, metadata: { i } })),
    ]) {
      const m = { messageId: 'm', role: 'ROLE_USER', parts };
      assert.equal(messageHash(m as unknown as MessageJson), referenceHash(m));
    }
  });

  it('is the hash stored tasks hold, whatever the key order, the ids and undefined members', () => {
    assert.equal(messageHash(SORTED), STORED_HASH);
    const shuffled = {
      taskId: 'tt',
      role: 'ROLE_USER',
      parts: [
        { text: 'hello', extra: undefined, metadata: { z: 1, a: [true, null, 2.5] } },
        { url: 'https://x/y', mediaType: 'text/plain' },
      ],
      metadata: { b: 'x', a: { d: 1, c: 2 } },
      referenceTaskIds: ['t'],
      extensions: ['e'],
      messageId: 'another id',
      contextId: 'c',
    } as unknown as MessageJson;
    assert.equal(messageHash(shuffled), STORED_HASH);
  });

  it('agrees for objects of many keys in any order', () => {
    // Integer-like keys too: an object lists them first, in numeric order, which is not the sorted order.
    const names = [...Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, '0')}`), '9', '10', '100'];
    const forward = Object.fromEntries(names.map((k, i) => [k, i]));
    const backward = Object.fromEntries([...names].reverse().map((k) => [k, forward[k]]));
    const m = (metadata: Record<string, unknown>) => ({ ...SORTED, metadata }) as MessageJson;
    assert.equal(messageHash(m(backward)), messageHash(m(forward)));
    assert.notEqual(messageHash(m({ ...backward, k00: 1 })), messageHash(m(forward)));
  });

  it('differs when anything the sender chose differs', () => {
    const changed = (m: Record<string, unknown>) => messageHash(m as unknown as MessageJson);
    const parts = SORTED.parts as unknown as Record<string, unknown>[];
    assert.notEqual(changed({ ...SORTED, role: 'ROLE_AGENT' }), STORED_HASH);
    assert.notEqual(changed({ ...SORTED, parts: [{ ...parts[0], text: 'hellp' }, parts[1]] }), STORED_HASH);
    assert.notEqual(changed({ ...SORTED, metadata: { a: { c: 2, d: 1 }, b: 'x', e: null } }), STORED_HASH);
    assert.notEqual(changed({ ...SORTED, parts: [parts[1], parts[0]] }), STORED_HASH);
  });
});
