import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { RegistryFile, type RegistryContent } from '../common/registry-file/registry-file.js';
import { dirname } from 'node:path';
import {
  httpUrl,
  readEntries,
  readEntry,
  readTenantList,
  RegistryFileError,
} from '../common/registry-file/registry-fields.js';
import { checkAuthUrl, readOutboundAuth, type AuthSource } from '../outbound-auth/auth-fields.js';
import type { OutboundAuth } from '../outbound-auth/outbound-auth.types.js';
import { readCardPin, type CardPin } from './card-pinning.js';

/** One remote A2A agent as the operator configured it. */
export interface RemoteAgent {
  name: string;
  /** The remote's JSON-RPC endpoint; its card is at `<url>/agent-card.json` (or the origin's well-known card). */
  url: string;
  /** Where the card is when it is elsewhere (`card_url`; VoltAgent: `/.well-known/<agent>/agent-card.json`). */
  cardUrl?: string;
  /** How Arbiter authenticates to it (`auth`; none when absent). */
  auth: OutboundAuth;
  /** Set when a `*_env` field of its `auth` names a variable that is not set. */
  missingTokenEnv?: string;
  /** `card_signature`: the keys the remote's card must be signed with (A2A §8.4.3). */
  cardSignature?: CardPin;
  /** An operator's entry: the tenants that see it (`tenants`; absent: every tenant). */
  tenants?: string[];
  /** A tenant's own entry (`/v1/remote-agents`): that tenant's id. */
  owner?: string;
}

export const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A problem in `a2a_agents.json`, naming the bad field. */
export { RegistryFileError as RegistryError };

/**
 * Parses and validates the registry file's content (seed 001's schema, and
 * `card_url` for a card that is not where the lookup would find it, `card_signature` to pin its signing keys):
 * `{ "agents": { "<name>": { "url", "card_url"?, "auth"?, "card_signature"?: { "jwks_url" | "jwk", "required"? } } } }`,
 * `auth` one of the outbound credentials
 * (`bearer` with `token` or `token_env`, `header`, `oauth2_client_credentials`, `mtls`, `token_exchange`).
 * The first problem is reported with the path of the bad field; relative `*_file` paths start at `baseDir`.
 */
export function parseRegistry(
  text: string,
  env: NodeJS.ProcessEnv,
  baseDir = '.',
): { agents: Map<string, RemoteAgent>; warnings: string[] } {
  const agents = new Map<string, RemoteAgent>();
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(readEntries(text, 'agents'))) {
    const at = `agents.${name}`;
    const { agent, warning } = readRemoteEntry(name, readEntry(name, value, at, REMOTE_NAME), at, { env, baseDir });
    if (warning) warnings.push(warning);
    agents.set(name, agent);
  }
  return { agents, warnings };
}

const FILE_FIELDS = ['url', 'card_url', 'auth', 'card_signature', 'tenants'];
const TENANT_FIELDS = ['url', 'card_url', 'auth', 'card_signature'];

/**
 * One entry: `url`, `card_url`, `auth` (and, in the operator's file — `source` names host variables and a base
 * directory — `tenants`). A tenant's entry (`source` empty) may name neither variables nor files.
 */
export function readRemoteEntry(
  name: string,
  entry: Record<string, unknown>,
  at: string,
  source: AuthSource,
): { agent: RemoteAgent; warning?: string } {
  const operator = source.env !== undefined;
  for (const k of Object.keys(entry)) {
    if (!(operator ? FILE_FIELDS : TENANT_FIELDS).includes(k)) {
      throw new RegistryFileError(`${at}: unknown field "${k}"`);
    }
  }
  const url = httpUrl(entry.url, `${at}.url`);
  const cardUrl = entry.card_url === undefined ? undefined : httpUrl(entry.card_url, `${at}.card_url`).href;
  const tenants = readTenantList(entry.tenants, `${at}.tenants`);
  const pin =
    entry.card_signature === undefined ? undefined : readCardPin(entry.card_signature, `${at}.card_signature`);
  // An empty `auth` (no token) is no credential, as before the other types existed.
  const empty = entry.auth !== null && typeof entry.auth === 'object' && Object.keys(entry.auth).length === 0;
  const { auth, missingEnv } =
    entry.auth === undefined || empty
      ? { auth: { type: 'none' } as const, missingEnv: [] }
      : readOutboundAuth(entry.auth, `${at}.auth`, source);
  checkAuthUrl(auth, url, at);
  const missingTokenEnv = missingEnv[0];
  const agent: RemoteAgent = {
    name,
    url: url.href.replace(/\/+$/, ''),
    ...(cardUrl ? { cardUrl } : {}),
    auth,
    ...(missingTokenEnv ? { missingTokenEnv } : {}),
    ...(tenants ? { tenants } : {}),
    ...(pin ? { cardSignature: pin } : {}),
  };
  const warning = missingTokenEnv
    ? `${at}: environment variable ${missingTokenEnv} is not set; calls will fail with HTTP 401`
    : undefined;
  return { agent, ...(warning ? { warning } : {}) };
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

  protected parse(text: string, env: NodeJS.ProcessEnv, path: string): RegistryContent<RemoteAgent> {
    const { agents, warnings } = parseRegistry(text, env, dirname(path));
    return { entries: agents, warnings };
  }
}
