import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { StartupError } from '../database/preflight.js';
import { keyIdOf, SecretBox, type SealingKey } from './secret-box.js';

/** The settings the box is built from (`SecretsSettings`). */
export interface SecretKeySettings {
  secretsKey?: string;
  secretsKeyFile?: string;
  secretsPreviousKeysFile?: string;
}

const BASE64_KEY = /^[A-Za-z0-9+/]{43}=$/;

/** One key in base64 (32 bytes); `where` names its source in the error, which never quotes it. */
export function parseSealingKey(text: string, where: string): SealingKey {
  const trimmed = text.trim();
  if (!BASE64_KEY.test(trimmed)) throw new StartupError(`${where} must hold 32 bytes in base64 (44 characters)`);
  const key = Buffer.from(trimmed, 'base64');
  return { kid: keyIdOf(key), key };
}

function readKeyFile(path: string, setting: string): string {
  try {
    return readFileSync(resolve(path), 'utf8');
  } catch (err) {
    throw new StartupError(`${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * The sealing keys: the current one from `ARBITER_SECRETS_KEY` or the file `ARBITER_SECRETS_KEY_FILE` names, and
 * the earlier ones (one base64 key a line, `#` comments and blank lines skipped) from
 * `ARBITER_SECRETS_PREVIOUS_KEYS_FILE`. A file that cannot be read or holds a malformed key stops the start.
 */
export function loadSealingKeys(s: SecretKeySettings): { current?: SealingKey; previous: SealingKey[] } {
  let current: SealingKey | undefined;
  if (s.secretsKey) current = parseSealingKey(s.secretsKey, 'ARBITER_SECRETS_KEY');
  else if (s.secretsKeyFile) {
    current = parseSealingKey(readKeyFile(s.secretsKeyFile, 'ARBITER_SECRETS_KEY_FILE'), s.secretsKeyFile);
  }
  const previous: SealingKey[] = [];
  if (s.secretsPreviousKeysFile) {
    const path = s.secretsPreviousKeysFile;
    readKeyFile(path, 'ARBITER_SECRETS_PREVIOUS_KEYS_FILE')
      .split('\n')
      .forEach((line, i) => {
        const t = line.trim();
        if (t && !t.startsWith('#')) previous.push(parseSealingKey(t, `${path} line ${i + 1}`));
      });
  }
  return { current, previous };
}

/** The box for these settings (see `loadSealingKeys`). */
export function secretBoxOf(s: SecretKeySettings): SecretBox {
  const { current, previous } = loadSealingKeys(s);
  return new SecretBox(current, previous);
}
