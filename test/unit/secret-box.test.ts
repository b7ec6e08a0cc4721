import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { StartupError } from '../../src/database/preflight.js';
import { aadOf, keyIdOf, SecretBox, SecretsError, type SealingKey } from '../../src/secrets/secret-box.js';
import { loadSealingKeys, secretBoxOf } from '../../src/secrets/secret-keys.js';

const newKey = (): SealingKey => {
  const key = randomBytes(32);
  return { kid: keyIdOf(key), key };
};
const AAD = aadOf('push_configs', 'tenant-a', 'task-1', 'cfg-1', 'token');
const refusal = (code: SecretsError['code']) => (err: unknown) => err instanceof SecretsError && err.code === code;

describe('SecretBox: AES-256-GCM envelopes for stored credentials', () => {
  it('seals and opens: v1, the key id, a fresh IV each time, nothing of the plaintext in the envelope', () => {
    const key = newKey();
    const box = new SecretBox(key);
    const a = box.seal('s3cret-token', AAD);
    const b = box.seal('s3cret-token', AAD);
    assert.match(a, new RegExp(`^v1:${key.kid}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$`));
    assert.notEqual(a, b, 'a fresh IV per seal');
    assert.ok(!a.includes('s3cret'));
    assert.equal(box.open(a, AAD), 's3cret-token');
    assert.equal(box.open(b, AAD), 's3cret-token');
    assert.equal(box.open(box.seal('', AAD), AAD), '', 'an empty secret too');
    assert.equal(box.open(box.seal('ünïcødé ✓', AAD), AAD), 'ünïcødé ✓');
  });

  it('binds the secret to its place: another row, tenant or field does not open it', () => {
    const box = new SecretBox(newKey());
    const sealed = box.seal('s3cret-token', AAD);
    for (const other of [
      aadOf('push_configs', 'tenant-b', 'task-1', 'cfg-1', 'token'),
      aadOf('push_configs', 'tenant-a', 'task-1', 'cfg-2', 'token'),
      aadOf('push_configs', 'tenant-a', 'task-1', 'cfg-1', 'credentials'),
      // The parts are not merely concatenated: moving a separator changes the AAD.
      aadOf('push_configs', 'tenant-atask-1', '', 'cfg-1', 'token'),
    ]) {
      assert.throws(() => box.open(sealed, other), refusal('tampered'));
    }
  });

  it('refuses an altered envelope: a changed ciphertext byte, tag, IV or key id', () => {
    const key = newKey();
    const box = new SecretBox(key);
    const sealed = box.seal('s3cret-token', AAD);
    const [v, kid, iv, body] = sealed.split(':') as [string, string, string, string];
    const flip = (text: string, at: number): string => {
      const bytes = Buffer.from(text, 'base64url');
      bytes[at] = (bytes[at] ?? 0) ^ 1;
      return bytes.toString('base64url');
    };
    const bodyLength = Buffer.from(body, 'base64url').length;
    assert.throws(() => box.open([v, kid, iv, flip(body, 0)].join(':'), AAD), refusal('tampered'));
    assert.throws(() => box.open([v, kid, iv, flip(body, bodyLength - 1)].join(':'), AAD), refusal('tampered'));
    assert.throws(() => box.open([v, kid, flip(iv, 3), body].join(':'), AAD), refusal('tampered'));
    assert.throws(() => box.open([v, 'zzzzzzzz', iv, body].join(':'), AAD), refusal('unknown_key'));
    assert.throws(() => box.open(['v2', kid, iv, body].join(':'), AAD), refusal('malformed'));
    assert.throws(() => box.open('s3cret-token', AAD), refusal('malformed'));
    assert.throws(() => box.open([v, kid, iv, 'AAAA'].join(':'), AAD), refusal('malformed'));
  });

  it('opens what an earlier key sealed while that key is listed as previous; seals under the current one', () => {
    const old = newKey();
    const next = newKey();
    const sealedBefore = new SecretBox(old).seal('s3cret-token', AAD);
    const rotated = new SecretBox(next, [old]);
    assert.equal(rotated.open(sealedBefore, AAD), 's3cret-token');
    assert.ok(rotated.needsReseal(sealedBefore));
    const sealedAfter = rotated.seal('s3cret-token', AAD);
    assert.deepEqual(SecretBox.formOf(sealedAfter), { sealed: true, kid: next.kid });
    assert.ok(!rotated.needsReseal(sealedAfter));
    const err = (() => {
      try {
        new SecretBox(next).open(sealedBefore, AAD);
      } catch (e) {
        return e as SecretsError;
      }
      return undefined;
    })();
    assert.equal(err?.code, 'unknown_key');
    assert.match(err?.message ?? '', new RegExp(`key ${old.kid}`));
  });

  it('without a key: not configured, refuses to seal with a message saying what to set; plain values still read', () => {
    const box = new SecretBox(undefined);
    assert.equal(box.configured(), false);
    assert.throws(() => box.seal('x', AAD), /needs a sealing key: the operator sets ARBITER_SECRETS_KEY/);
    assert.throws(() => box.require('a remote agent credential'), refusal('not_configured'));
    const stored = box.toStored('s3cret-token', AAD);
    assert.equal(stored, 'plain:s3cret-token');
    assert.equal(box.fromStored(stored, AAD), 's3cret-token');
    assert.ok(box.needsReseal(stored));
    const sealed = new SecretBox(newKey()).seal('s3cret-token', AAD);
    assert.throws(() => box.fromStored(sealed, AAD), refusal('unknown_key'));
  });

  it('with a key, toStored seals and fromStored opens', () => {
    const box = new SecretBox(newKey());
    const stored = box.toStored('s3cret-token', AAD);
    assert.match(stored, /^v1:/);
    assert.equal(box.fromStored(stored, AAD), 's3cret-token');
    assert.equal(box.fromStored('plain:legacy', AAD), 'legacy');
  });
});

describe('sealing keys from the settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'arbiter-keys-'));
  const b64 = (k: SealingKey): string => k.key.toString('base64');

  it('reads the key from the variable or its file, and previous keys one a line', () => {
    const [cur, p1, p2] = [newKey(), newKey(), newKey()];
    writeFileSync(join(dir, 'key'), `${b64(cur)}\n`);
    writeFileSync(join(dir, 'previous'), `# retired 2026-01\n${b64(p1)}\n\n  ${b64(p2)}  \n`);
    const fromFile = loadSealingKeys({
      secretsKeyFile: join(dir, 'key'),
      secretsPreviousKeysFile: join(dir, 'previous'),
    });
    assert.equal(fromFile.current?.kid, cur.kid);
    assert.deepEqual(
      fromFile.previous.map((k) => k.kid),
      [p1.kid, p2.kid],
    );
    assert.equal(loadSealingKeys({ secretsKey: b64(cur) }).current?.kid, cur.kid);
    const sealed = new SecretBox(p2).seal('x', AAD);
    assert.equal(
      secretBoxOf({ secretsKey: b64(cur), secretsPreviousKeysFile: join(dir, 'previous') }).open(sealed, AAD),
      'x',
    );
    assert.equal(secretBoxOf({}).configured(), false);
  });

  it('a missing file or a malformed key stops the start, naming the place, never the key', () => {
    assert.throws(
      () => loadSealingKeys({ secretsKeyFile: join(dir, 'nope') }),
      (e) => e instanceof StartupError && /ARBITER_SECRETS_KEY_FILE: cannot read .*nope \(ENOENT\)/.test(e.message),
    );
    writeFileSync(join(dir, 'short'), Buffer.alloc(16).toString('base64'));
    assert.throws(() => loadSealingKeys({ secretsKeyFile: join(dir, 'short') }), /must hold 32 bytes in base64/);
    writeFileSync(join(dir, 'prev-bad'), `${b64(newKey())}\nnot-a-key\n`);
    assert.throws(
      () => loadSealingKeys({ secretsPreviousKeysFile: join(dir, 'prev-bad') }),
      (e) =>
        e instanceof StartupError &&
        /prev-bad line 2 must hold 32 bytes/.test(e.message) &&
        !/not-a-key/.test(e.message),
    );
  });
});
