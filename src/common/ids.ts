import { randomFillSync } from 'node:crypto';

/**
 * UUIDs for the request path, written into one string from bytes of the
 * CSPRNG drawn 4 KiB at a time (Node 20's `randomUUID` builds its string from
 * twenty concatenations, some 600 bytes of short-lived strings per id).
 *
 * - `uuid()`: random (version 4), the same randomness as `crypto.randomUUID`.
 * - `uuid7()`: time-ordered (version 7, RFC 9562 §5.7): the Unix time in
 *   milliseconds in the first 48 bits, then 74 random bits. Keys that grow
 *   with time are added at the right edge of a B-tree index instead of at a
 *   random leaf: PostgreSQL inserts them without descending the tree, and a
 *   run of them dirties a few pages instead of one page each (fewer pages to
 *   log in full after a checkpoint). Task and context ids are of this kind.
 *   Nothing in the id is guessable but its creation time, which the task
 *   states anyway (its first status event, the native API's `created_at`);
 *   its first characters are the same for every id of the same minute, so a
 *   short form of it is its end.
 */
const POOL_BYTES = 16 * 256;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let offset = POOL_BYTES;
/** Character codes of each byte's two hex digits. */
const HEX = new Uint8Array(512);
for (let b = 0; b < 256; b++) {
  HEX[2 * b] = '0123456789abcdef'.charCodeAt(b >> 4);
  HEX[2 * b + 1] = '0123456789abcdef'.charCodeAt(b & 15);
}
const text = Buffer.alloc(36, '-');

/** The offset of 16 fresh random bytes in `pool`. */
function draw(): number {
  if (offset === POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const o = offset;
  offset += 16;
  return o;
}

/** The 16 bytes at `o`, with `version` and the variant (10) set, in the lowercase text form. */
function format(o: number, version: number): string {
  pool[o + 6] = (pool[o + 6] & 0x0f) | (version << 4);
  pool[o + 8] = (pool[o + 8] & 0x3f) | 0x80; // variant 10
  let j = 0;
  for (let i = 0; i < 16; i++) {
    if (j === 8 || j === 13 || j === 18 || j === 23) j++; // the dashes stay
    const b = pool[o + i];
    text[j++] = HEX[2 * b];
    text[j++] = HEX[2 * b + 1];
  }
  return text.toString('latin1', 0, 36);
}

export function uuid(): string {
  return format(draw(), 4);
}

/** `ms`: milliseconds since the Unix epoch, 0 to 2^48 − 1 (until the year 10889); others wrap. */
export function uuid7(ms: number = Date.now()): string {
  const o = draw();
  const high = Math.floor(ms / 0x100000000); // the top 16 of 48 bits
  const low = ms >>> 0; // the low 32
  pool[o] = high >>> 8;
  pool[o + 1] = high & 0xff;
  pool[o + 2] = low >>> 24;
  pool[o + 3] = (low >>> 16) & 0xff;
  pool[o + 4] = (low >>> 8) & 0xff;
  pool[o + 5] = low & 0xff;
  return format(o, 7);
}
