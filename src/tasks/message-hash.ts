import { createHash, type Hash } from 'node:crypto';
import type { MessageJson } from '../common/a2a-json.js';

/**
 * What makes a resent message "the same" for its messageId: a SHA-256 over
 * everything the sender chose — role, parts (file bytes included), context,
 * metadata, references, extensions — but the ids themselves. Object keys
 * are taken in sorted order, so two clients (or two bindings, or two
 * dialects) that send the same message in another key order agree. Hashed
 * as it is walked: no canonical copy of a message of megabytes is built.
 */
export function messageHash(m: MessageJson): string {
  const { messageId: _id, taskId: _task, ...chosen } = m;
  const hash = createHash('sha256');
  feed(hash, chosen);
  return hash.digest('base64url');
}

/** Feeds a JSON value in a self-delimiting form: a type tag, then the value (strings length-prefixed). */
function feed(hash: Hash, v: unknown): void {
  if (v === undefined || v === null) {
    hash.update('n');
  } else if (typeof v === 'string') {
    hash.update(`s${v.length}:`).update(v);
  } else if (typeof v === 'number' || typeof v === 'boolean') {
    hash.update(`${typeof v === 'number' ? 'd' : 'b'}${String(v)};`);
  } else if (Array.isArray(v)) {
    hash.update(`a${v.length}:`);
    for (const item of v) feed(hash, item);
  } else if (typeof v === 'object') {
    // Absent and undefined members are the same message.
    const keys = Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort();
    hash.update(`o${keys.length}:`);
    for (const k of keys) {
      feed(hash, k);
      feed(hash, (v as Record<string, unknown>)[k]);
    }
  }
}
