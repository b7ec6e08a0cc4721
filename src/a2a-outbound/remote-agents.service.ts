import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { AgentCard, Message, SendMessageRequest, Task, type SendMessageResult } from '@a2a-js/sdk';
import {
  Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { AppConfig } from '../config/app-config.js';
import { capBytes } from '../common/text.js';
import { EgressError, type EgressPolicy } from '../common/net/egress.js';
import { egressFetch, RemoteCallError } from './egress-fetch.js';
import { RemoteRegistry, type RemoteAgent } from './remote-registry.service.js';
import { partsText, replyText } from './remote-reply.js';
import type { MessageJson } from '../common/a2a-json.js';

const REPLY_CAP = 16 * 1024;
const MAX_TTL_MS = 86_400_000;

type Json = Record<string, unknown>;

interface CachedCard {
  /** url + token: a registry edit that changes either makes a new entry. */
  key: string;
  card: AgentCard;
  /** The card as the remote sent it (ProtoJSON or v0.3 JSON), for rendering. */
  raw: Json;
  client: Client;
  expiresAt: number;
  etag?: string;
  /** Where the card was found, and whether it was asked for as v1.0. */
  source: string;
  versioned: boolean;
}

/** What an `/a2a` command returns: the result body, and the remote task it touched. */
export interface RemoteResult {
  body: string;
  remoteTaskId?: string;
}

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);
const INTERRUPTED = new Set(['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED']);

const capText = (text: string): string => capBytes(text, REPLY_CAP);

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
  private readonly cards = new Map<string, CachedCard>();
  private readonly policy: EgressPolicy;

  constructor(
    private readonly config: AppConfig,
    readonly registry: RemoteRegistry,
  ) {
    this.policy = { allowPrivate: config.a2aAllowPrivate, allowHosts: new Set() };
  }

  /** The `/a2a` tool: `list`, `card <name>`, `call <name> <message>`. */
  async tool(args: string, signal: AbortSignal): Promise<RemoteResult> {
    const m = /^(\S+)(?:\s+(\S+))?(?:\s+([\s\S]+))?$/.exec(args.trim());
    const sub = m?.[1];
    const name = m?.[2];
    const rest = m?.[3]?.trim();
    if (sub === 'list' && !name) return { body: await this.listText(signal) };
    if (sub === 'card' && name && !rest) return { body: await this.cardText(name, signal) };
    if (sub === 'call' && name && rest) return this.call(name, rest, signal);
    return { body: 'ERR: usage: /a2a list | /a2a card <name> | /a2a call <name> <message>' };
  }

  /** The master agent's roster section, or '' with no remotes. */
  async roster(signal: AbortSignal): Promise<string> {
    const remotes = this.registry.list();
    if (remotes.length === 0) return '';
    const lines = await Promise.all(remotes.map(async (r) => `  ${r.name} — ${await this.summary(r, signal)}`));
    return `REMOTE A2A AGENTS — delegate with /a2a call <name> <message> (distinct trust boundary; no shared memory):\n${lines.join('\n')}`;
  }

  private async summary(remote: RemoteAgent, signal: AbortSignal): Promise<string> {
    try {
      const { card } = await this.cardFor(remote, signal);
      const skills = card.skills.map((s) => s.name || s.id).filter(Boolean);
      const description = (card.description || card.name).replace(/\s+/g, ' ').slice(0, 200);
      return `${description}${skills.length ? ` (skills: ${skills.join(', ')})` : ''}`;
    } catch {
      signal.throwIfAborted();
      return '(card unavailable)';
    }
  }

  private async listText(signal: AbortSignal): Promise<string> {
    const remotes = this.registry.list();
    if (remotes.length === 0) return 'no remote agents configured';
    const lines = await Promise.all(remotes.map(async (r) => `${r.name} — ${await this.summary(r, signal)}`));
    return lines.join('\n');
  }

  private async cardText(name: string, signal: AbortSignal): Promise<string> {
    const remote = this.registry.get(name);
    if (!remote) return `ERR: no remote agent named '${name}'`;
    let cached: CachedCard;
    try {
      cached = await this.cardFor(remote, signal);
    } catch (err) {
      signal.throwIfAborted();
      return `ERR: card fetch failed: ${reason(err)}`;
    }
    const c = cached.card;
    const lines = [
      `name: ${c.name}`,
      `description: ${c.description || '(none)'}`,
      `version: ${c.version || '(none)'}`,
      `url: ${remote.url}`,
      `card: ${cached.source}`,
      ...c.supportedInterfaces.map((i) => `interface: ${i.protocolBinding} ${i.protocolVersion} ${i.url}`),
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
  async call(name: string, text: string, signal: AbortSignal): Promise<RemoteResult> {
    const remote = this.registry.get(name);
    if (!remote) return { body: `ERR: no remote agent named '${name}'` };
    if (remote.missingTokenEnv) {
      return { body: `ERR: HTTP 401: no token (environment variable ${remote.missingTokenEnv} is not set)` };
    }
    const timeout = AbortSignal.timeout(this.config.a2aTimeoutMs);
    const callSignal = AbortSignal.any([signal, timeout]);
    let cached: CachedCard;
    try {
      cached = await this.cardFor(remote, callSignal);
    } catch (err) {
      signal.throwIfAborted();
      return { body: `ERR: card fetch failed: ${reason(err)}` };
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
        this.cards.delete(remote.name);
        cached = await this.cardFor(remote, callSignal);
        result = await cached.client.sendMessage(request, { signal: callSignal });
      }
      if ('messageId' in result && !('status' in result)) {
        return { body: capText(partsText((Message.toJSON(result) as Partial<MessageJson>).parts)) };
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
      if (state === 'TASK_STATE_COMPLETED') return { body: capText(reply), remoteTaskId };
      if (INTERRUPTED.has(state)) {
        // The remote's question (or what it said before asking) goes to the calling agent.
        const waiting = state === 'TASK_STATE_AUTH_REQUIRED' ? 'authorization' : 'more input';
        return { body: capText(`(the remote agent needs ${waiting})${reply ? `\n${reply}` : ''}`), remoteTaskId };
      }
      const what = state.replace('TASK_STATE_', '').toLowerCase();
      return { body: capText(`ERR: remote task ${what}${reply ? `: ${reply}` : ''}`), remoteTaskId };
    } catch (err) {
      if (callSignal.aborted) {
        if (remoteTaskId) await this.cancelRemote(cached.client, remoteTaskId);
        if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('cancelled');
        return {
          body: `ERR: transport: no answer within ${Math.round(this.config.a2aTimeoutMs / 1000)} s`,
          remoteTaskId,
        };
      }
      return { body: describeCallError(err), remoteTaskId };
    }
  }

  /** Best effort, bounded: the caller is gone either way. */
  private async cancelRemote(client: Client, id: string): Promise<void> {
    try {
      await client.cancelTask({ id, tenant: '', metadata: undefined }, { signal: AbortSignal.timeout(5_000) });
    } catch (err) {
      this.logger.warn({ remoteTaskId: id, reason: reason(err) }, 'could not cancel the remote task');
    }
  }

  /** The remote's card and client, cached (TTL, Cache-Control, ETag revalidation). */
  private async cardFor(remote: RemoteAgent, signal: AbortSignal): Promise<CachedCard> {
    const key = `${remote.url}\n${remote.cardUrl ?? ''}\n${remote.token}`;
    const cached = this.cards.get(remote.name);
    if (cached && cached.key === key && cached.expiresAt > Date.now()) return cached;
    const fresh = await this.fetchCard(remote, key, cached?.key === key ? cached : undefined, signal);
    this.cards.set(remote.name, fresh);
    return fresh;
  }

  private async fetchCard(
    remote: RemoteAgent,
    key: string,
    previous: CachedCard | undefined,
    signal: AbortSignal,
  ): Promise<CachedCard> {
    const origin = new URL(remote.url).origin;
    const fetchImpl = egressFetch(this.policy, remote.token, this.config.a2aCardTimeoutMs, origin);
    const get = (url: string, versioned: boolean, etag?: string) =>
      fetchImpl(url, {
        headers: {
          accept: 'application/json',
          ...(versioned ? { 'a2a-version': '1.0' } : {}),
          ...(etag ? { 'if-none-match': etag } : {}),
        },
        signal,
      });
    // `card_url` when the registry names one; else `<url>/agent-card.json` (the seed's rule), then the
    // origin's well-known card. Each is asked for as v1.0 first, then without a version (a version-aware
    // v0.3 server refuses a 1.0 request for its card).
    const primary = remote.cardUrl ?? `${remote.url}/agent-card.json`;
    const wellKnown = `${new URL(remote.url).origin}/.well-known/agent-card.json`;
    const attempts: [string, boolean][] = previous
      ? [[previous.source, previous.versioned]]
      : [
          [primary, true],
          [primary, false],
          ...(remote.cardUrl
            ? []
            : ([
                [wellKnown, true],
                [wellKnown, false],
              ] as [string, boolean][])),
        ];
    let res: Response | undefined;
    let source = primary;
    let versioned = true;
    let firstError: unknown;
    for (const [url, v] of attempts) {
      try {
        res = await get(url, v, previous?.etag);
        source = url;
        versioned = v;
        break;
      } catch (err) {
        firstError ??= err;
        if (!(err instanceof RemoteCallError && /^HTTP (400|404|406)/.test(err.message))) throw err;
      }
    }
    if (!res) throw firstError;
    const ttl = ttlOf(res.headers.get('cache-control'), this.config.a2aCardTtlMs);
    if (res.status === 304 && previous) return { ...previous, expiresAt: Date.now() + ttl };
    if (res.status !== 200) throw new RemoteCallError('http', `HTTP ${res.status}`);
    let raw: unknown;
    try {
      raw = await res.json();
    } catch {
      throw new RemoteCallError('malformed', 'the body is not JSON');
    }
    if (!looksLikeCard(raw)) throw new RemoteCallError('malformed', 'the body is not a valid AgentCard');
    const fetchForCalls = egressFetch(this.policy, remote.token, this.config.a2aTimeoutMs, origin);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: fetchForCalls, legacyCompat: { enabled: true } });
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: fetchForCalls, legacyCompat: { enabled: true } })],
        cardResolver: resolver,
      }),
    );
    let card: AgentCard;
    let client: Client;
    try {
      card = resolver.normalizeAgentCard(raw);
      client = await factory.createFromAgentCard(card);
    } catch (err) {
      throw new RemoteCallError('malformed', `no usable interface in the card (${reason(err)})`);
    }
    const etag = res.headers.get('etag') ?? undefined;
    return { key, card, raw, client, expiresAt: Date.now() + ttl, etag, source, versioned };
  }
}

function looksLikeCard(v: unknown): v is Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const c = v as Json;
  if (typeof c.name !== 'string') return false;
  return (Array.isArray(c.supportedInterfaces) && c.supportedInterfaces.length > 0) || typeof c.url === 'string';
}

/** Cache lifetime: `max-age` when the remote sends one (`no-store`/`no-cache`: revalidate every use). */
function ttlOf(cacheControl: string | null, fallback: number): number {
  if (!cacheControl) return fallback;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) return 0;
  const m = /\bmax-age=(\d+)/i.exec(cacheControl);
  return m?.[1] ? Math.min(Number(m[1]) * 1000, MAX_TTL_MS) : fallback;
}

function stateName(task: Task): string {
  const json = Task.toJSON(task) as { status?: { state?: string } };
  return json.status?.state ?? 'TASK_STATE_UNSPECIFIED';
}

function isSettled(task: Task): boolean {
  const s = stateName(task);
  return TERMINAL.has(s) || INTERRUPTED.has(s);
}

/** Worth one card re-fetch: the endpoint moved or speaks another version now. */
function staleCard(err: unknown): boolean {
  if (err instanceof RemoteCallError) return /^HTTP (404|405|410)/.test(err.message);
  const code = (err as { envelopeCode?: unknown }).envelopeCode;
  return code === -32009 || code === -32601;
}

function reason(err: unknown): string {
  if (err instanceof RemoteCallError || err instanceof EgressError) return err.message;
  return (err as Error).message?.slice(0, 200) || 'unknown error';
}

/** A failed call in the seed's vocabulary. */
function describeCallError(err: unknown): string {
  if (err instanceof EgressError) {
    return err.code === 'blocked' || err.code === 'bad_url'
      ? `ERR: transport: refused: ${err.message}`
      : `ERR: transport: ${err.message}`;
  }
  if (err instanceof RemoteCallError) {
    return err.kind === 'http' ? `ERR: ${err.message}` : `ERR: malformed response: ${err.message}`;
  }
  const code = (err as { envelopeCode?: unknown }).envelopeCode;
  if (typeof code === 'number') {
    return `ERR: JSON-RPC ${code}: ${String((err as Error).message)
      .replace(/\s+/g, ' ')
      .slice(0, 300)}`;
  }
  return `ERR: malformed response: ${String((err as Error).message ?? err)
    .replace(/\s+/g, ' ')
    .slice(0, 200)}`;
}
