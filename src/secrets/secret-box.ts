import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** Why a secret could not be sealed or opened. Its message never quotes a secret or a key. */
export class SecretsError extends Error {
  constructor(
    readonly code: 'not_configured' | 'unknown_key' | 'malformed' | 'tampered',
    message: string,
  ) {
    super(message);
    this.name = 'SecretsError';
  }
}

/** A sealing key and its id (stored with every ciphertext it seals). */
export interface SealingKey {
  kid: string;
  key: Buffer;
}

/** The envelope's version tag: `v1:<kid>:<iv>:<ciphertext+tag>`, the last three base64url. */
const V1 = 'v1';
/** How a value stored without sealing (no key configured when it was written) is marked. */
export const PLAIN = 'plain:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key's id: the first 8 characters of a hash of it (names the key, reveals nothing usable of it). */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update('arbiter-secrets-kid\0').update(key).digest('base64url').slice(0, 8);
}

/** The associated data that binds a secret to its place: a row's identity and the field (`JSON` of the parts). */
export function aadOf(...parts: string[]): string {
  return JSON.stringify(parts);
}

/** What a stored value is: sealed under a key (by its id), or plain (written without a key). */
export type StoredForm = { sealed: true; kid: string } | { sealed: false };

/**
 * Envelope encryption of credentials Arbiter must use again (a webhook's
 * token, a remote's client secret): AES-256-GCM with a fresh 96-bit IV per
 * seal, the key's id stored with the ciphertext, and associated data that
 * names the secret's owner and purpose — so a ciphertext copied to another
 * row, tenant or field does not open. Earlier keys open what they sealed
 * until `npm run secrets:rotate` has sealed it again under the current key.
 */
export class SecretBox {
  private readonly keys = new Map<string, Buffer>();

  constructor(
    private readonly current: SealingKey | undefined,
    previous: readonly SealingKey[] = [],
  ) {
    for (const k of [...previous, ...(current ? [current] : [])]) {
      if (k.key.length !== 32) throw new TypeError('a sealing key is 32 bytes');
      this.keys.set(k.kid, k.key);
    }
  }

  /** Whether a current key is set: without one nothing can be sealed. */
  configured(): boolean {
    return this.current !== undefined;
  }

  /** The current key's id, if any. */
  get keyId(): string | undefined {
    return this.current?.kid;
  }

  /** Throws `not_configured` (with what to set) when there is no key; `what` names what needed sealing. */
  require(what = 'a credential'): void {
    if (!this.current) {
      throw new SecretsError(
        'not_configured',
        `storing ${what} needs a sealing key: the operator sets ARBITER_SECRETS_KEY or ARBITER_SECRETS_KEY_FILE`,
      );
    }
  }

  /** Seals `plaintext` under the current key, bound to `aad` (see `aadOf`). */
  seal(plaintext: string, aad: string): string {
    this.require();
    const current = this.current as SealingKey;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', current.key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${V1}:${current.kid}:${iv.toString('base64url')}:${body.toString('base64url')}`;
  }

  /** Opens an envelope `seal` made with the same `aad`, under the current key or an earlier one. */
  open(envelope: string, aad: string): string {
    const parts = envelope.split(':');
    const [version, kid, ivText, bodyText] = parts;
    if (parts.length !== 4 || version !== V1 || !kid || !ivText || !bodyText) {
      throw new SecretsError('malformed', 'the stored secret is not a sealed envelope');
    }
    const key = this.keys.get(kid);
    if (!key) {
      throw new SecretsError(
        'unknown_key',
        `the stored secret is sealed under key ${kid}, which is neither ARBITER_SECRETS_KEY nor one of the previous keys`,
      );
    }
    const iv = Buffer.from(ivText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) {
      throw new SecretsError('malformed', 'the stored secret is not a sealed envelope');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      // A wrong key, a changed byte, or a ciphertext that belongs to another row or field: GCM cannot tell which.
      throw new SecretsError(
        'tampered',
        'the stored secret does not open (altered, or moved from where it was sealed)',
      );
    }
  }

  /** What to store for `plaintext`: sealed when a key is set, else marked plain (`plain:…`). */
  toStored(plaintext: string, aad: string): string {
    return this.current ? this.seal(plaintext, aad) : `${PLAIN}${plaintext}`;
  }

  /** The secret a stored value holds (sealed or plain). */
  fromStored(stored: string, aad: string): string {
    return stored.startsWith(PLAIN) ? stored.slice(PLAIN.length) : this.open(stored, aad);
  }

  /** Whether a stored value is sealed, and under which key. */
  static formOf(stored: string): StoredForm {
    if (stored.startsWith(PLAIN)) return { sealed: false };
    const [version, kid] = stored.split(':');
    return version === V1 && kid ? { sealed: true, kid } : { sealed: false };
  }

  /** Whether a stored value must be sealed again: plain, or sealed under a key other than the current one. */
  needsReseal(stored: string): boolean {
    const form = SecretBox.formOf(stored);
    return !form.sealed || form.kid !== this.current?.kid;
  }
}
