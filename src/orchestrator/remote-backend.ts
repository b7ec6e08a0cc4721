import { randomUUID } from 'node:crypto';
import { SendMessageRequest, StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import type { ArtifactJson, PartJson } from '../common/a2a-json.js';
import { partsText } from '../a2a-outbound/remote-reply.js';
import { onBehalfOf } from '../outbound-auth/caller-context.js';
import { stripSecrets } from '../outbound-auth/credentials.js';
import { storable } from '../common/text.js';
import {
  artifactDelta,
  foldedParts,
  isObject,
  mappedArtifact,
  mappedMessage,
  stateOf,
  UpstreamProblem,
} from './remote-content.js';
import type { RemoteAgents } from '../a2a-outbound/remote-agents.service.js';
import type { AgentBackend } from '../registry/backend.js';
import { turnFailure } from './remote-refusal.js';
import { KNOWN_STATES, pollTask, resubscribed, sendAndPoll, SETTLED, watched } from './remote-sources.js';
import { UPSTREAM_CONTEXT_ID, UPSTREAM_TASK_ID, type RunContext, type RunEvent, type RunInput } from './run-event.js';

type Json = Record<string, unknown>;
type TurnEnd = Extract<RunEvent, { type: 'done' | 'input_required' | 'error' }>;

export interface RemoteTurnDeps {
  remotes: RemoteAgents;
  /** The most bytes one upstream event may carry (the inbound limit of a message with its files). */
  maxEventBytes: number;
}

/**
 * One turn of a remote-backed agent (gateway mode): the message goes to the upstream A2A agent with the registry
 * entry's credential — to its task when the Arbiter task is already bound to one — and what the upstream says
 * comes back as run events, mapped to this task: interim status messages, artifacts (chunks as chunks), the
 * settling status. Streams when the upstream's card says it streams, else follows the task with GetTask and
 * backoff. Bounded by the agent's timeouts; anything the upstream says that is not A2A, not of its task, or over
 * the size limit ends the turn with an error naming it.
 */
export async function* remoteTurn(
  deps: RemoteTurnDeps,
  ctx: RunContext,
  input: RunInput,
  signal: AbortSignal,
): AsyncGenerator<RunEvent> {
  const backend = ctx.agent.constitution.backend as AgentBackend;
  await ctx.durable?.wait();
  await ctx.mayAct?.(signal);
  // Nothing leaves the process for a task that is not stored: a creation refused (the running-task cap, counted by
  // the statement over every replica) or answered by a resent messageId's task abandons the run before `durable`.
  signal.throwIfAborted();
  const follower = new Follower(deps, ctx, backend, signal);
  try {
    yield* follower.follow(input);
  } catch (err) {
    signal.throwIfAborted();
    follower.failed = true;
    yield follower.failure(err);
  } finally {
    await follower.close();
  }
}

class Follower {
  private client: Client | undefined;
  private bound: { taskId: string; contextId: string } | undefined;
  /** What is logged of the upstream's artifacts (folded, by id) and messages (by id), to log only what is new. */
  private readonly artifacts = new Map<string, ArtifactJson>();
  private readonly messages = new Set<string>();
  /** A turn resumed after a takeover: task snapshots are reconciled with the log, their history included. */
  private resuming = false;
  private readonly call = new AbortController();
  private settled = false;
  /** The turn ended itself on an error (a timeout, a refusal …) before the upstream task settled. */
  failed = false;
  /** The turn sends a message (it is not a resumed one), and whether the upstream has answered it with an event. */
  private sending = false;
  private answered = false;
  private timedOut: UpstreamProblem | undefined;
  /** The registry entry's secrets: never in what the caller is told of the upstream's errors. */
  private secrets: string[] = [];

  constructor(
    private readonly deps: RemoteTurnDeps,
    private readonly ctx: RunContext,
    private readonly backend: AgentBackend,
    private readonly signal: AbortSignal,
  ) {
    const taskId = ctx.metadata?.[UPSTREAM_TASK_ID];
    const contextId = ctx.metadata?.[UPSTREAM_CONTEXT_ID];
    if (typeof taskId === 'string' && typeof contextId === 'string') this.bound = { taskId, contextId };
    // What earlier turns logged of the upstream's artifacts: a task snapshot that repeats them adds nothing.
    for (const a of ctx.artifacts ?? []) this.artifacts.set(a.artifactId, { ...a, parts: foldedParts(a.parts) });
    for (const id of ctx.loggedMessageIds ?? []) this.messages.add(id);
    signal.addEventListener('abort', () => this.call.abort(signal.reason), { once: true });
  }

  async *follow(input: RunInput): AsyncGenerator<RunEvent> {
    const t = this.backend.timeouts;
    this.sending = !input.resume;
    const total = setTimeout(
      () => this.expire(new UpstreamProblem('upstream_timeout', `the upstream did not settle within ${t.total_ms} ms`)),
      t.total_ms,
    );
    try {
      const cached = await this.acting(() =>
        this.deps.remotes.upstream(this.ctx.tenantId, this.backend, this.call.signal),
      );
      this.client = cached.client;
      const streaming = cached.card.capabilities?.streaming === true;
      this.secrets = cached.secrets;
      // The caller's files go as the caller sent them: their bytes, not Arbiter's references to its stored copies.
      const given: PartJson[] = input.message?.parts ?? [{ text: input.text }];
      const parts = this.ctx.withFileBytes ? await this.ctx.withFileBytes(given) : given;
      const request = SendMessageRequest.fromJSON({
        message: {
          messageId: randomUUID(),
          role: 'ROLE_USER',
          parts,
          ...(this.bound ? { taskId: this.bound.taskId, contextId: this.bound.contextId } : {}),
        },
        configuration: cached.card.capabilities?.streaming ? {} : { returnImmediately: true },
      });
      const source = input.resume
        ? this.resumed(this.client, streaming)
        : streaming
          ? this.client.sendMessageStream(request, { signal: this.call.signal })
          : sendAndPoll(this.client, request, this.call.signal);
      for await (const json of this.watched(source, streaming)) {
        const out = this.onEvent(json);
        for (const ev of out.events) yield ev;
        if (out.end) {
          this.settled = true;
          yield out.end;
          return;
        }
      }
      // The stream closed before the task settled: follow it by GetTask.
      if (!this.bound) throw new UpstreamProblem('upstream_protocol', 'the upstream closed its stream without a task');
      for await (const json of this.watched(pollTask(this.client, this.bound.taskId, this.call.signal))) {
        const out = this.onEvent(json);
        for (const ev of out.events) yield ev;
        if (out.end) {
          this.settled = true;
          yield out.end;
          return;
        }
      }
      throw new UpstreamProblem('upstream_protocol', 'the upstream stopped answering before the task settled');
    } catch (err) {
      if (this.timedOut && !this.signal.aborted) throw this.timedOut;
      throw err;
    } finally {
      clearTimeout(total);
    }
  }

  /** The turn's error event for what went wrong: the upstream's own message, its secrets stripped. */
  failure(err: unknown): TurnEnd {
    return turnFailure(err, this.bound?.taskId, this.secrets, this.sending && !this.answered);
  }

  /**
   * A turn that ends before its upstream task settled — canceled, timed out, refused — cancels that task (best
   * effort, bounded): nothing goes on working upstream for a task that is over here.
   */
  async close(): Promise<void> {
    // Not when the run merely stopped writing (its database was away — a write of its events failed, or its task's
    // creation — or its task was taken over by another replica): the upstream task goes on, and a replica that
    // follows it later needs it.
    const why = (this.signal.reason as Error | undefined)?.name;
    const abandoned = why === 'RunAbandoned' || why === 'RunWriteFailed';
    const over = this.failed || (this.signal.aborted && !abandoned);
    const { client, bound } = this;
    if (!this.settled && over && bound && client) {
      await this.acting(() => this.deps.remotes.cancelUpstream(client, bound.taskId));
    }
    // A settled turn's stream is read to its end in the background (`watched`), its connection then reused.
    if (!this.settled) this.call.abort();
  }

  /** Calls to the upstream act for the caller who started the turn (a `token_exchange` credential exchanges its JWT). */
  private acting<T>(fn: () => Promise<T>): Promise<T> {
    return onBehalfOf(this.ctx.subject, fn);
  }

  private expire(problem: UpstreamProblem): void {
    this.timedOut ??= problem;
    this.call.abort(problem);
  }

  /** The source's events within the agent's timeouts (see `watched`). */
  private watched(source: AsyncIterable<unknown>, stream = false): AsyncGenerator<Json> {
    const t = this.backend.timeouts;
    return watched(source, {
      firstMs: t.first_event_ms,
      idleMs: t.idle_ms,
      maxEventBytes: this.deps.maxEventBytes,
      expire: (problem) => this.expire(problem),
      acting: (fn) => this.acting(fn),
      answered: () => (this.answered = true),
      settled: () => this.settled,
      abort: () => this.call.abort(),
      stream,
    });
  }

  /**
   * A task taken over from a replica that died while following it: its upstream task as it stands now, then its
   * live events (`resubscribed`); task snapshots are reconciled with the log then, their history included.
   */
  private resumed(client: Client, streaming: boolean): AsyncGenerator<StreamResponse> {
    if (!this.bound)
      throw new UpstreamProblem('upstream_protocol', 'the task was taken over before its upstream task was known');
    this.resuming = true;
    return resubscribed(client, this.bound.taskId, streaming, this.call.signal);
  }

  /** What one upstream event adds to the log, and the end of the turn when it settles the task. */
  private onEvent(json: Json): { events: RunEvent[]; end?: TurnEnd } {
    const protocol = (what: string) => new UpstreamProblem('upstream_protocol', `the upstream sent ${what}`);
    if (isObject(json.message)) {
      if (this.bound) throw protocol('a message without its task while a task was under way');
      const message = mappedMessage(this.ctx, json.message, protocol);
      return { events: [], end: { type: 'done', content: partsText(message.parts), message } };
    }
    if (isObject(json.task)) {
      const task = json.task;
      const events = this.bind(task.id, task.contextId, protocol);
      const status = isObject(task.status) ? task.status : {};
      if (this.resuming && Array.isArray(task.history)) {
        // The upstream's messages the log lacks (status messages it kept in its history), in its order; the
        // settling status's own message is left to the status.
        const closing = isObject(status.message) ? status.message.messageId : undefined;
        for (const m of task.history) {
          if (!isObject(m) || m.role !== 'ROLE_AGENT' || typeof m.messageId !== 'string') continue;
          if (m.messageId === closing || this.messages.has(m.messageId.slice(0, 128))) continue;
          const message = mappedMessage(this.ctx, m, protocol);
          this.messages.add(message.messageId);
          events.push({ type: 'upstream_status', message });
        }
      }
      const settles = SETTLED.has(stateOf(task));
      for (const a of Array.isArray(task.artifacts) ? task.artifacts : []) {
        const artifact = mappedArtifact(a, protocol);
        const delta = artifactDelta(this.artifacts.get(artifact.artifactId), artifact);
        if (!delta) continue;
        this.artifacts.set(artifact.artifactId, { ...artifact, parts: foldedParts(artifact.parts) });
        events.push({
          type: 'upstream_artifact',
          artifact: { ...artifact, parts: delta.parts },
          append: delta.append,
          lastChunk: !delta.append || settles,
        });
      }
      return this.status(status, events, protocol);
    }
    if (isObject(json.statusUpdate)) {
      const u = json.statusUpdate;
      const events = this.bind(u.taskId, u.contextId, protocol);
      return this.status(isObject(u.status) ? u.status : {}, events, protocol);
    }
    if (isObject(json.artifactUpdate)) {
      const u = json.artifactUpdate;
      const events = this.bind(u.taskId, u.contextId, protocol);
      const artifact = mappedArtifact(u.artifact, protocol);
      const append = u.append === true;
      // A chunk extends what is logged; a whole artifact replaces it (what a later GetTask would compare with).
      const whole = append ? this.artifacts.get(artifact.artifactId) : undefined;
      const merged = whole ? { ...whole, parts: [...whole.parts, ...artifact.parts] } : artifact;
      this.artifacts.set(artifact.artifactId, { ...merged, parts: foldedParts(merged.parts) });
      events.push({ type: 'upstream_artifact', artifact, append, lastChunk: u.lastChunk === true });
      return { events };
    }
    throw protocol('an event of no known kind');
  }

  /** Binds the turn to the upstream's task on its first event; an event of another task is refused. */
  private bind(taskId: unknown, contextId: unknown, protocol: (w: string) => UpstreamProblem): RunEvent[] {
    if (typeof taskId !== 'string' || !taskId || typeof contextId !== 'string') {
      throw protocol('an event without its task id and context id');
    }
    // Kept in the task's metadata: text the store can hold, of a bounded length.
    if (![taskId, contextId].every((id) => id.length <= 256 && storable(id) === id)) {
      throw protocol('an event whose task id or context id is not text of at most 256 characters');
    }
    if (this.bound) {
      if (this.bound.taskId !== taskId) throw protocol(`an event of another task (${taskId.slice(0, 64)})`);
      return [];
    }
    this.bound = { taskId, contextId };
    return [{ type: 'upstream_bound', upstreamTaskId: taskId, upstreamContextId: contextId }];
  }

  private status(status: Json, events: RunEvent[], protocol: (w: string) => UpstreamProblem) {
    const state = typeof status.state === 'string' ? status.state : '';
    if (!KNOWN_STATES.has(state)) throw protocol(`a status of no known state (${state.slice(0, 40) || 'none'})`);
    const message = isObject(status.message) ? mappedMessage(this.ctx, status.message, protocol) : undefined;
    const fresh = message && !this.messages.has(message.messageId) ? message : undefined;
    if (fresh) this.messages.add(fresh.messageId);
    const text = message ? partsText(message.parts) : '';
    switch (state) {
      case 'TASK_STATE_COMPLETED':
        // Completed without a message: the task settles with none (no empty agent message is made up).
        return { events, end: { type: 'done' as const, content: text, ...(message ? { message } : { bare: true }) } };
      case 'TASK_STATE_INPUT_REQUIRED':
      case 'TASK_STATE_AUTH_REQUIRED':
        return { events, end: { type: 'input_required' as const, prompt: text, ...(message ? { message } : {}) } };
      case 'TASK_STATE_FAILED':
      case 'TASK_STATE_REJECTED':
      case 'TASK_STATE_CANCELED': {
        const what = state.replace('TASK_STATE_', '').toLowerCase();
        const end: TurnEnd = {
          type: 'error',
          code: `upstream_${what}`,
          message: stripSecrets(
            `the upstream task ended ${what}${text ? `: ${text.slice(0, 2000)}` : ''}`,
            this.secrets,
          ),
        };
        return { events, end };
      }
      default:
        if (fresh) events.push({ type: 'upstream_status', message: fresh });
        return { events };
    }
  }
}
