import { createHash, hash as sha, type Hash } from 'node:crypto';
import type { MessageJson } from '../common/a2a-json.js';

/** Text gathered before it goes to the hash: one native call for a small message instead of one per token. */
const CHUNK = 16 * 1024;

/**
 * The hash's input, gathered as pieces and handed on joined, in chunks (a string of any size goes as it is).
 * Pieces, not a string grown by `+=`: that makes a string object per piece, and a flat copy of them all at the end.
 */
class Feed {
  private readonly pieces: string[] = [];
  private size = 0;
  private hash: Hash | null = null;

  add(s: string): void {
    if (this.size + s.length <= CHUNK) {
      this.pieces.push(s);
      this.size += s.length;
      return;
    }
    this.flush();
    if (s.length > CHUNK) this.open().update(s);
    else {
      this.pieces.push(s);
      this.size = s.length;
    }
  }

  digest(): string {
    if (!this.hash) return sha('sha256', this.pieces.join(''), 'base64url');
    this.flush();
    return this.hash.digest('base64url');
  }

  private open(): Hash {
    return (this.hash ??= createHash('sha256'));
  }

  private flush(): void {
    if (this.size > 0) this.open().update(this.pieces.join(''));
    this.pieces.length = 0;
    this.size = 0;
  }
}

/**
 * What makes a resent message "the same" for its messageId: a SHA-256 over
 * everything the sender chose — role, parts (file bytes included), context,
 * metadata, references, extensions — but the ids themselves. Object keys
 * are taken in sorted order, so two clients (or two bindings, or two
 * dialects) that send the same message in another key order agree. Hashed
 * as it is walked: no canonical copy of a message of megabytes is built
 * (the text goes to the hash in chunks of 16 KiB; the bytes hashed are the
 * same whatever the chunks).
 */
export function messageHash(m: MessageJson): string {
  const { messageId: _id, taskId: _task, ...chosen } = m;
  const feed = new Feed();
  walk(feed, chosen);
  return feed.digest();
}

/** Feeds a JSON value in a self-delimiting form: a type tag, then the value (strings length-prefixed). */
function walk(feed: Feed, v: unknown): void {
  if (v === undefined || v === null) {
    feed.add('n');
  } else if (typeof v === 'string') {
    sized(feed, 's', v.length);
    feed.add(v);
  } else if (typeof v === 'number' || typeof v === 'boolean') {
    feed.add(typeof v === 'number' ? 'd' : 'b');
    feed.add(String(v));
    feed.add(';');
  } else if (Array.isArray(v)) {
    sized(feed, 'a', v.length);
    for (const item of v) walk(feed, item);
  } else if (typeof v === 'object') {
    const keys = sortedKeys(v as Record<string, unknown>);
    sized(feed, 'o', keys.length);
    for (const k of keys) {
      walk(feed, k);
      walk(feed, (v as Record<string, unknown>)[k]);
    }
  }
}

/** A tag and a length: `s12:` (three pieces; a small number's text is V8's cached one, no new string). */
function sized(feed: Feed, tag: string, n: number): void {
  feed.add(tag);
  feed.add(String(n));
  feed.add(':');
}

/** Up to this many keys are sorted by insertion, in place: the built-in sort makes work arrays even for two. */
const SMALL = 16;

/**
 * The object's keys in sorted order, without those whose value is undefined (absent and undefined members are the
 * same message). Most objects come with their keys in order already and nothing undefined: then `Object.keys` is
 * the answer as it is, without a filtered copy or a sorted one.
 */
function sortedKeys(o: Record<string, unknown>): string[] {
  let keys = Object.keys(o);
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    if (o[keys[i]] === undefined) {
      keys = keys.filter((k) => o[k] !== undefined);
      sorted = false;
      break;
    }
    if (i > 0 && keys[i - 1] > keys[i]) sorted = false;
  }
  if (sorted) return keys;
  if (keys.length > SMALL) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i];
    let j = i - 1;
    for (; j >= 0 && keys[j] > k; j--) keys[j + 1] = keys[j];
    keys[j + 1] = k;
  }
  return keys;
}
