import { randomFillSync } from 'node:crypto';

/**
 * Random (version 4) UUIDs for the request path: the same randomness as
 * `crypto.randomUUID` (bytes from the CSPRNG, drawn 4 KiB at a time), written
 * into one string. Node 20's `randomUUID` builds its string from twenty
 * concatenations, some 600 bytes of short-lived strings per id; a blocking
 * send takes three ids.
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

export function uuid(): string {
  if (offset === POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const o = offset;
  offset += 16;
  pool[o + 6] = (pool[o + 6] & 0x0f) | 0x40; // version 4
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
