import assert from 'node:assert/strict';
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
// Computed when resent messages were first compared: a change of the hashed form would make every resend of a
// message stored before it look like a different message.
const STORED_HASH = 'oD_tr935QhCnPyOZ2jnvQhjsiMH-TRwuCcjZwOnU-yY';

describe('message hash', () => {
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
    const names = Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, '0')}`);
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
