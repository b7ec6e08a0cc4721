import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { isPaddedBase64 } from '../../src/common/base64.js';
import { checkParts } from '../../src/a2a-wire/dialects/message-input.js';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';

/** The pattern the check replaced: right on short strings, a stack overflow on a few MiB (on Node 20 and 24). */
const PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

describe('padded base64', () => {
  it('agrees with the grammar on edge cases and on random strings', () => {
    const cases = [
      '',
      'AA==',
      'AAA=',
      'AAAA',
      'A===',
      'AA=A',
      '=AAA',
      'AAA',
      'AAAAA',
      'AB+/',
      'AB-_',
      'AAAA\n',
      'A=A=',
      '====',
      'AA==AAAA',
    ];
    const alphabet = 'AB+/=-_ ';
    for (let i = 0; i < 20_000; i++) {
      const n = i % 13;
      cases.push(Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join(''));
    }
    for (let n = 0; n < 40; n++) cases.push(randomBytes(n).toString('base64'));
    for (const s of cases) assert.equal(isPaddedBase64(s), PATTERN.test(s), JSON.stringify(s));
  });

  it('takes a file of several MiB, where the pattern overflowed its stack', () => {
    const big = randomBytes(6 * 1024 * 1024).toString('base64');
    assert.equal(isPaddedBase64(big), true);
    assert.equal(isPaddedBase64(`${big.slice(0, -4)}!AAA`), false);
  });

  it("a message's part of 4 MiB is within a 5 MiB limit; one over it is invalid params naming the part", () => {
    const limits = { maxFileBytes: 5 * 1024 * 1024, maxMessageFileBytes: 10 * 1024 * 1024 };
    const part = (n: number) => ({ raw: randomBytes(n).toString('base64'), mediaType: 'application/octet-stream' });
    checkParts([part(4 * 1024 * 1024)], 'message.parts', limits);
    assert.throws(
      () => checkParts([{ text: 'hi' }, part(5 * 1024 * 1024 + 1)], 'message.parts', limits),
      (err: unknown) => err instanceof A2aError && /message\.parts\[1\]\.raw.*at most 5242880 bytes/.test(err.message),
    );
  });
});
