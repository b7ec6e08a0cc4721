import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { RegistryFile, type RegistryContent } from '../common/registry-file/registry-file.js';
import {
  httpUrl,
  readBearerAuth,
  readEntries,
  readEntry,
  RegistryFileError,
  resolveEnvRefs,
} from '../common/registry-file/registry-fields.js';
import { readCardPin, type CardPin } from './card-pinning.js';

/** One remote A2A agent as the operator configured it. */
export interface RemoteAgent {
  name: string;
  /** The remote's JSON-RPC endpoint; its card is at `<url>/agent-card.json` (or the origin's well-known card). */
  url: string;
  /** Where the card is when it is elsewhere (`card_url`; VoltAgent: `/.well-known/<agent>/agent-card.json`). */
  cardUrl?: string;
  /** The per-remote bearer ('' when none, or when `token_env` is unset). */
  token: string;
  /** Set when `token_env` names a variable that is not set. */
  missingTokenEnv?: string;
  /** `card_signature`: the keys the remote's card must be signed with (A2A §8.4.3). */
  cardSignature?: CardPin;
}

export const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A problem in `a2a_agents.json`, naming the bad field. */
export { RegistryFileError as RegistryError };

/**
 * Parses and validates the registry file's content (seed 001's schema, and
 * `card_url` for a card that is not where the lookup would find it, `card_signature` to pin its signing keys):
 * `{ "agents": { "<name>": { "url", "card_url"?, "auth": { "type": "bearer", "token" | "token_env" },
 * "card_signature"?: { "jwks_url" | "jwk", "required"? } } } }`.
 * The first problem is reported with the path of the bad field.
 */
export function parseRegistry(
  text: string,
  env: NodeJS.ProcessEnv,
): { agents: Map<string, RemoteAgent>; warnings: string[] } {
  const agents = new Map<string, RemoteAgent>();
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(readEntries(text, 'agents'))) {
    const at = `agents.${name}`;
    const entry = readEntry(name, value, at, REMOTE_NAME);
    for (const k of Object.keys(entry)) {
      if (!['url', 'card_url', 'auth', 'card_signature'].includes(k)) {
        throw new RegistryFileError(`${at}: unknown field "${k}"`);
      }
    }
    const url = httpUrl(entry.url, `${at}.url`);
    const cardUrl = entry.card_url === undefined ? undefined : httpUrl(entry.card_url, `${at}.card_url`).href;
    const pin =
      entry.card_signature === undefined ? undefined : readCardPin(entry.card_signature, `${at}.card_signature`);
    const auth = entry.auth === undefined ? {} : readBearerAuth(entry.auth, `${at}.auth`, false);
    let token = 'token' in auth ? auth.token : '';
    let missingTokenEnv: string | undefined;
    if ('tokenEnv' in auth) {
      const { values, missing } = resolveEnvRefs({ token: auth.tokenEnv }, env);
      if (values.token) token = values.token;
      if (missing.length > 0) {
        missingTokenEnv = auth.tokenEnv;
        warnings.push(`${at}: environment variable ${auth.tokenEnv} is not set; calls will fail with HTTP 401`);
      }
    }
    agents.set(name, {
      name,
      url: url.href.replace(/\/+$/, ''),
      ...(cardUrl ? { cardUrl } : {}),
      token,
      ...(missingTokenEnv ? { missingTokenEnv } : {}),
      ...(pin ? { cardSignature: pin } : {}),
    });
  }
  return { agents, warnings };
}

/**
 * The remote-agent registry file (`ARBITER_HOME/a2a_agents.json` by default,
 * `ARBITER_A2A_AGENTS_FILE`), kept loaded by `RegistryFile`: missing → no
 * remotes; edits picked up without a restart; a malformed file is logged with
 * the bad field and the last good registry stays in force.
 */
@Injectable()
export class RemoteRegistry extends RegistryFile<RemoteAgent> {
  constructor(config: AppConfig) {
    super(
      {
        logger: 'A2aRegistry',
        registry: 'A2A registry',
        entries: 'remote A2A agent',
        entry: 'agent',
        none: 'no remote agents configured',
      },
      () => config.a2aRegistryPath,
    );
  }

  protected parse(text: string, env: NodeJS.ProcessEnv): RegistryContent<RemoteAgent> {
    const { agents, warnings } = parseRegistry(text, env);
    return { entries: agents, warnings };
  }
}
