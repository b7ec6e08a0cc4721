import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { Message, SendMessageRequest, Task, type SendMessageResult } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { AppConfig } from '../config/app-config.js';
import { capBytes } from '../common/text.js';
import { RemoteCards, type CachedCard } from './remote-cards.js';
import {
  describeCallError,
  describeCardError,
  reason,
  staleCard,
  transientCardError,
  UpstreamCardError,
} from './remote-errors.js';
import { CardSignatureError } from '../common/card-signing/card-signature.js';
import { OutboundAuthError } from '../outbound-auth/outbound-auth.types.js';
import type { RemoteAgent } from './remote-registry.service.js';
import { TenantRemotes } from './tenant-remotes.service.js';
import { partsText, replyText } from './remote-reply.js';
import type { MessageJson } from '../common/a2a-json.js';
import { OutboundCredentials } from '../outbound-auth/outbound-credentials.service.js';
import { secretsOf, strippedWithin, stripKnownSecrets, stripSecrets } from '../outbound-auth/credentials.js';

const REPLY_CAP = 16 * 1024;

/** What an `/a2a` command returns: the result body, and the remote task it touched. */
export interface RemoteResult {
  body: string;
  remoteTaskId?: string;
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const INTERRUPTED = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);

const capText = (text: string): string => capBytes(text, REPLY_CAP);
/**
 * A failure's text as the calling agent (and so its task) sees it: the remote's own words can echo what Arbiter sent
 * it, so the entry's secrets, and anything shaped like a bearer token or a JWT, are taken out.
 */
const shown = (remote: RemoteAgent, text: string): string =>
  strippedWithin(stripSecrets, text, secretsOf(remote.auth), REPLY_CAP);
/** A reply as the calling agent sees it: the entry's secrets and the issued tokens out (a remote may quote them). */
const replied = (remote: RemoteAgent, text: string): string =>
  strippedWithin(stripKnownSecrets, text, secretsOf(remote.auth), REPLY_CAP);

/** An entry's URL as the calling agent sees it: without its query, which may hold a key (`?code=…`). */
function withoutQuery(u: string): string {
  if (!/[?#]/.test(u)) return u; // a gRPC interface's host:port too
  try {
    const url = new URL(u);
    return url.search || url.hash ? `${url.origin}${url.pathname}${url.search ? '?…' : ''}` : u;
  } catch {
    return '(not a URL)';
  }
}

/**
 * Remote A2A agents through the official SDK client: the card from the
 * registry's `card_url`, else `<url>/agent-card.json` (else the origin's
 * `/.well-known/agent-card.json`),
 * the client (v1.0 or v0.3, whichever the card offers) from the SDK's
 * factory, every byte through the egress guard. Only the message text and
 * the remote's own token leave Arbiter.
 */
@Injectable()
export class RemoteAgents {
  private readonly logger = new Logger('A2aOutbound');
  private readonly cards: RemoteCards;

  constructor(
    private readonly config: AppConfig,
    private readonly remotes: TenantRemotes,
    credentials: OutboundCredentials,
  ) {
    this.cards = new RemoteCards(config, { allowPrivate: config.a2aAllowPrivate, allowHosts: new Set() }, credentials);
  }

  /** The `/a2a` tool for a tenant (the remotes it sees): `list`, `card <name>`, `call <name> <message>`. */
  async tool(args: string, tenantId: string, signal: AbortSignal): Promise<RemoteResult> {
    const m = /^(\S+)(?:\s+(\S+))?(?:\s+([\s\S]+))?$/.exec(args.trim());
    const sub = m?.[1];
    const name = m?.[2];
    const rest = m?.[3]?.trim();
    if (sub === 'list' && !name) return { body: await this.listText(tenantId, signal) };
    if (sub === 'card' && name && !rest) return { body: await this.cardText(tenantId, name, signal) };
    if (sub === 'call' && name && rest) return this.call(tenantId, name, rest, signal);
    return { body: 'ERR: usage: /a2a list | /a2a card <name> | /a2a call <name> <message>' };
  }

  /** The master agent's roster section (the remotes the tenant sees), or '' with none. */
  async roster(tenantId: string, signal: AbortSignal): Promise<string> {
    const remotes = await this.remotes.forTenant(tenantId);
    if (remotes.length === 0) return '';
    const lines = await Promise.all(remotes.map(async (r) => `  ${r.name} — ${await this.summary(r, signal)}`));
    return `REMOTE A2A AGENTS — delegate with /a2a call <name> <message> (distinct trust boundary; no shared memory):\n${lines.join('\n')}`;
  }

  private async summary(remote: RemoteAgent, signal: AbortSignal): Promise<string> {
    try {
      const { card } = await this.cards.cardFor(remote, signal);
      const skills = card.skills.map((s) => s.name || s.id).filter(Boolean);
      const description = (card.description || card.name).replace(/\s+/g, ' ').slice(0, 200);
      return `${description}${skills.length ? ` (skills: ${skills.join(', ')})` : ''}`;
    } catch (err) {
      signal.throwIfAborted();
      return err instanceof CardSignatureError ? '(card signature invalid)' : '(card unavailable)';
    }
  }

  private async listText(tenantId: string, signal: AbortSignal): Promise<string> {
    const remotes = await this.remotes.forTenant(tenantId);
    if (remotes.length === 0) return 'no remote agents configured';
    const lines = await Promise.all(remotes.map(async (r) => `${r.name} — ${await this.summary(r, signal)}`));
    return lines.join('\n');
  }

  private async cardText(tenantId: string, name: string, signal: AbortSignal): Promise<string> {
    const remote = await this.remotes.get(tenantId, name);
    if (!remote) return `ERR: no remote agent named '${name}'`;
    let cached: CachedCard;
    try {
      cached = await this.cards.cardFor(remote, signal);
    } catch (err) {
      signal.throwIfAborted();
      return shown(remote, describeCardError(err));
    }
    const c = cached.card;
    const lines = [
      `name: ${c.name}`,
      `description: ${c.description || '(none)'}`,
      `version: ${c.version || '(none)'}`,
      `url: ${withoutQuery(remote.url)}`,
      `card: ${withoutQuery(cached.source)}`,
      `signature: ${signatureLine(cached)}`,
      ...c.supportedInterfaces.map(
        // Shown, the card's links lose the entry's secrets too (the client calls them as sent).
        (i) =>
          `interface: ${i.protocolBinding} ${i.protocolVersion} ${stripKnownSecrets(withoutQuery(i.url), secretsOf(remote.auth))}`,
      ),
      `streaming: ${c.capabilities?.streaming ? 'yes' : 'no'}`,
      'skills:',
      ...(c.skills.length
        ? c.skills.map((s) => `  - ${s.name || s.id}${s.description ? `: ${s.description.replace(/\s+/g, ' ')}` : ''}`)
        : ['  (none)']),
    ];
    return capText(lines.join('\n'));
  }

  /**
   * Sends the message and waits for the remote task to end (polling
   * GetTask), within `ARBITER_A2A_TIMEOUT_MS`. The caller's cancellation
   * cancels the remote task (CancelTask) as well as the HTTP request.
   */
  async call(tenantId: string, name: string, text: string, signal: AbortSignal): Promise<RemoteResult> {
    const remote = await this.remotes.get(tenantId, name);
    if (!remote) return { body: `ERR: no remote agent named '${name}'` };
    return this.callRemote(remote, text, signal, this.config.a2aTimeoutMs);
  }

  /**
   * A delegation to a remote-backed agent (`/agent <id> …` of another agent): its upstream called like `/a2a
   * call`, within the agent's `total_ms`. The reply goes back to the delegating agent, not into a task of the
   * remote-backed agent's own.
   */
  async callBackend(
    tenantId: string,
    backend: { remote: string; registry?: 'tenant' | 'shared'; timeouts: { total_ms: number } },
    text: string,
    signal: AbortSignal,
  ): Promise<RemoteResult> {
    const remote = await this.remotes.lookup(tenantId, backend.remote, backend.registry);
    if (!remote) return { body: `ERR: no remote agent named '${backend.remote}' in the registry` };
    return this.callRemote(remote, text, signal, backend.timeouts.total_ms);
  }

  private async callRemote(
    remote: RemoteAgent,
    text: string,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<RemoteResult> {
    if (remote.missingTokenEnv) {
      return { body: `ERR: HTTP 401: no token (environment variable ${remote.missingTokenEnv} is not set)` };
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const callSignal = AbortSignal.any([signal, timeout]);
    let cached: CachedCard;
    try {
      cached = await this.cards.cardFor(remote, callSignal);
    } catch (err) {
      signal.throwIfAborted();
      return { body: shown(remote, describeCardError(err)) };
    }
    let remoteTaskId: string | undefined;
    const sentId = randomUUID();
    const request = SendMessageRequest.fromJSON({
      message: { messageId: sentId, role: 'ROLE_USER', parts: [{ text }] },
      configuration: { returnImmediately: true },
    });
    try {
      let result: SendMessageResult;
      try {
        result = await cached.client.sendMessage(request, { signal: callSignal });
      } catch (err) {
        if (!staleCard(err) || callSignal.aborted) throw err;
        // The remote may have moved: fetch the card once more and retry once.
        this.cards.forget(remote);
        cached = await this.cards.cardFor(remote, callSignal);
        result = await cached.client.sendMessage(request, { signal: callSignal });
      }
      if ('messageId' in result && !('status' in result)) {
        return { body: replied(remote, partsText((Message.toJSON(result) as Partial<MessageJson>).parts)) };
      }
      let task = result as Task;
      remoteTaskId = task.id;
      for (let wait = 100; !isSettled(task); wait = Math.min(wait * 2, 1000)) {
        await sleep(wait, undefined, { signal: callSignal });
        task = await cached.client.getTask({ id: task.id, historyLength: 0, tenant: '' }, { signal: callSignal });
      }
      let reply = replyText(task, sentId);
      if (!reply) {
        // Nothing in artifacts or the status message: read the history once (the server's default length, A2A §3.2.4).
        task = await cached.client.getTask({ id: task.id, tenant: '' }, { signal: callSignal });
        reply = replyText(task, sentId);
      }
      const state = stateName(task);
      if (state === 'TASK_STATE_COMPLETED') return { body: replied(remote, reply), remoteTaskId };
      if (INTERRUPTED.has(state)) {
        // The remote's question (or what it said before asking) goes to the calling agent.
        const waiting = state === 'TASK_STATE_AUTH_REQUIRED' ? 'authorization' : 'more input';
        // What it asks with goes through the same filter as a failure: an auth request may quote the refused token.
        return {
          body: shown(remote, `(the remote agent needs ${waiting})${reply ? `\n${reply}` : ''}`),
          remoteTaskId,
        };
      }
      const what = state.replace('TASK_STATE_', '').toLowerCase();
      return { body: shown(remote, `ERR: remote task ${what}${reply ? `: ${reply}` : ''}`), remoteTaskId };
    } catch (err) {
      if (callSignal.aborted) {
        if (remoteTaskId) await this.cancelRemote(cached.client, remoteTaskId);
        if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('cancelled');
        return {
          body: `ERR: transport: no answer within ${Math.round(timeoutMs / 1000)} s`,
          remoteTaskId,
        };
      }
      return { body: shown(remote, describeCallError(err)), remoteTaskId };
    }
  }

  /**
   * A remote-backed agent's upstream: its card and SDK client (the registry entry's credential, the egress
   * guard), found in `registry` when named. Throws an `Error` whose message is safe to show.
   */
  async upstream(
    tenantId: string,
    backend: { remote: string; registry?: 'tenant' | 'shared' },
    signal: AbortSignal,
  ): Promise<CachedCard & { secrets: string[] }> {
    const remote = await this.remotes.lookup(tenantId, backend.remote, backend.registry);
    if (!remote) throw new Error(`no remote agent named '${backend.remote}' in the registry`);
    if (remote.missingTokenEnv) throw new Error(`no token (environment variable ${remote.missingTokenEnv} is not set)`);
    const secrets = secretsOf(remote.auth);
    try {
      return { ...(await this.cards.cardFor(remote, signal)), secrets };
    } catch (err) {
      signal.throwIfAborted();
      const message = stripSecrets(describeCardError(err).replace(/^ERR: /, ''), secrets);
      // A credential that could not be had is Arbiter's failure, not the upstream's answer.
      throw err instanceof OutboundAuthError
        ? new Error(message)
        : new UpstreamCardError(message, transientCardError(err));
    }
  }

  /** Cancels an upstream task, best effort and bounded. */
  cancelUpstream(client: Client, id: string): Promise<void> {
    return this.cancelRemote(client, id);
  }

  /** Best effort, bounded: the caller is gone either way. */
  private async cancelRemote(client: Client, id: string): Promise<void> {
    try {
      await client.cancelTask({ id, tenant: '', metadata: undefined }, { signal: AbortSignal.timeout(5_000) });
    } catch (err) {
      this.logger.warn({ remoteTaskId: id, reason: reason(err) }, 'could not cancel the remote task');
    }
  }
}

/** Whether the card was verified, and by which pinned key. */
function signatureLine(cached: CachedCard): string {
  if (!cached.trust) return 'not checked (no card_signature pinned)';
  return cached.trust.verified ? `verified (kid ${cached.trust.kid})` : 'not signed (card_signature not required)';
}

function stateName(task: Task): string {
  const json = Task.toJSON(task) as { status?: { state?: string } };
  return json.status?.state ?? 'TASK_STATE_UNSPECIFIED';
}

function isSettled(task: Task): boolean {
  const s = stateName(task);
  return TERMINAL.has(s) || INTERRUPTED.has(s);
}
