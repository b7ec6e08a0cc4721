import type { RunAbort } from '../common/run-abort.js';
import type { ArtifactJson, MessageJson, PartJson } from '../common/a2a-json.js';
import type { SubjectToken } from '../common/subject-token.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import type { ModelCallUsage } from '../usage/usage-call.js';
import type { Steps } from '../common/async-queue.js';
import type { Latch } from '../common/latch.js';

/** One part of a user's input, already validated and rendered for the model. */
export interface RunInput {
  /** The text the model sees (data parts rendered as JSON, text files inlined). */
  text: string;
  messageId: string;
  /** The message as stored (every part): what a remote-backed agent forwards to its upstream. */
  message?: MessageJson;
  /**
   * Not a new input: a remote-backed task taken over from a replica that died while following its upstream task.
   * The turn sends nothing; it reconciles with the upstream task and follows it on (see `remoteTurn`).
   */
  resume?: boolean;
}

/** The task metadata keys that bind a remote-backed agent's task to its upstream task. */
export const UPSTREAM_TASK_ID = 'x-arbiter.upstream_task_id';
export const UPSTREAM_CONTEXT_ID = 'x-arbiter.upstream_context_id';
/** The task metadata key of the error a remote-backed agent's upstream answered a send with (`UpstreamRefusal`). */
export const UPSTREAM_ERROR = 'x-arbiter.upstream_error';

/**
 * The error an upstream answered a send with, before any event of its task: its A2A type where the caller's
 * binding has the same (else `internal`, or `unavailable` for a transient failure) and its message, secrets
 * stripped. A blocking send (and a stream that has sent nothing yet) answers it as an error of its own binding.
 */
export interface UpstreamRefusal {
  type: UpstreamErrorType;
  message: string;
}
export type UpstreamErrorType =
  'invalid_params' | 'content_type_not_supported' | 'unsupported_operation' | 'internal' | 'unavailable';

/** Who is running what: everything a run may depend on besides its input. */
export interface RunContext {
  tenantId: string;
  agent: ResolvedAgent;
  /**
   * The JWT of the caller that started (or resumed) the run, for outbound credentials that act on the caller's
   * behalf (token exchange); absent for an opaque token. In memory only: never stored, logged or serialised.
   */
  subject?: SubjectToken;
  taskId: string;
  contextId: string;
  /** The task's artifacts when the run started (a remote-backed agent logs only what its upstream adds to them). */
  artifacts?: ArtifactJson[];
  /**
   * Parts with their stored files' bytes put back (a remote-backed agent sends its upstream the bytes its caller
   * sent, not Arbiter's references to them). Absent: the parts as they are.
   */
  withFileBytes?: (parts: PartJson[]) => Promise<PartJson[]>;
  /** The task's metadata when the run started (a remote-backed agent's upstream task is kept there). */
  metadata?: Record<string, unknown>;
  /**
   * A resumed remote-backed task: the ids of every message its log holds (user messages, the upstream's status
   * messages and replies), so that reconciling with the upstream's history appends only what is new.
   */
  loggedMessageIds?: string[];
  /** The task's conversation so far (for a turn that continues it), oldest first. */
  history?: { role: 'user' | 'assistant'; content: string }[];
  /**
   * Settles once the task is stored (a new task's run may start while its
   * creation commits; see `TaskService.create`): the run calls no model
   * outside this process and runs no tool before. It never rejects: a task
   * that could not be stored aborts the run before this settles, so the run
   * checks its abort after it. Absent: stored already.
   */
  durable?: Latch;
  /**
   * Resolves once this replica may act for the run (see `LeaseFence`): at
   * once normally; after an outage, once its leases are confirmed. Called
   * before every model or tool call; rejects when `signal` aborts first.
   * Absent: always.
   */
  mayAct?: (signal: AbortSignal) => Promise<void>;
  /**
   * Called before each model call outside the process, with the agent whose
   * turn makes it and how many accounted calls the run has reported so far:
   * undefined when no budget applies, else a promise that rejects with a
   * `budget_exhausted` `DomainError` when the tenant's or the agent's budget
   * is spent (counting the run's own calls, once they are committed), or
   * with `signal`'s reason when it aborts first. Absent: never checked.
   */
  beforeModelCall?: (agentId: string, reported: number, signal: AbortSignal) => Promise<void> | undefined;
}

/**
 * What a run emits, in order. The task store persists each as an event; the
 * A2A dialects and the native API are projections of the same sequence.
 */
export type RunEvent =
  /**
   * A chunk of an agent's visible reply, forwarded as soon as the model
   * produces it. Depth 0 is the agent the request named; a delegated
   * sub-agent's text has depth ≥ 1 and its agent id.
   */
  | { type: 'text'; delta: string; depth?: number; agent?: string }
  /** A slash command ran (`ok` false for an `ERR:` result). `args` is shortened. */
  | {
      type: 'tool_call';
      tool: string;
      args: string;
      ok: boolean;
      depth: number;
      agent: string;
      /** Tool-specific facts for the client, e.g. `remote_task_id` of an `/a2a call`. */
      detail?: Record<string, string>;
    }
  /** A file written with `/write` for the client (text, or bytes from `/write --base64`). */
  | { type: 'file'; path: string; bytes: Buffer; mediaType: string; depth: number; agent: string }
  /** A delegated agent's whole reply, at the end of its turn. */
  | { type: 'sub_agent_response'; agent: string; depth: number; content: string }
  /**
   * Token counts so far for this turn; `call`, the model call that moved them
   * (absent for the offline echo model, which is not accounted).
   */
  | { type: 'usage'; inputTokens: number; outputTokens: number; call?: ModelCallUsage }
  /**
   * A remote-backed agent's upstream task, once known: kept in the task's metadata
   * (`x-arbiter.upstream_task_id`, `x-arbiter.upstream_context_id`).
   */
  | { type: 'upstream_bound'; upstreamTaskId: string; upstreamContextId: string }
  /** A remote-backed agent's upstream said something while working (an interim status message). */
  | { type: 'upstream_status'; message: MessageJson }
  /** A remote-backed agent's upstream artifact (or chunk of one), already mapped to this task. */
  | { type: 'upstream_artifact'; artifact: ArtifactJson; append: boolean; lastChunk: boolean }
  /** The turn needs more input from the user (task goes to input-required); `message`, the upstream's own. */
  | { type: 'input_required'; prompt: string; message?: MessageJson }
  /**
   * The turn finished; `content` is the full reply; `message`, the upstream's own reply (a remote-backed agent);
   * `bare`: the upstream completed without a message, and none is added.
   */
  | { type: 'done'; content: string; message?: MessageJson; bare?: boolean }
  /**
   * The turn failed; `code` is stable, `message` safe to show; `refusal`, the upstream answered the send itself
   * with an error (kept in the task's metadata, `x-arbiter.upstream_error`).
   */
  | { type: 'error'; code: string; message: string; refusal?: UpstreamRefusal };

/**
 * A run's inputs. Inputs that can hand over one already queued without a promise offer `steps` (see `Steps`):
 * a run whose first message is at hand then starts its turn at once, in the same tick.
 */
export type RunInputs = AsyncIterable<RunInput> & { steps?(): Steps<RunInput> };

/**
 * The boundary every task runs behind (A2A or native): an agent turn as a
 * stream of events. `inputs` yields the first message and then any message
 * that continues the task while it runs; a run is canceled with
 * `abort.abort()` (the turn asks `abort`, and hands its signal to what it
 * calls), and the iterator ends after `done`, `input_required` or `error`.
 * `abort` is the run's own: a consumer that stops reading before the
 * turn is over (the task ended elsewhere) has abandoned the run, and the
 * orchestrator aborts it so that the turn stops too.
 */
export interface Orchestrator {
  run(ctx: RunContext, inputs: RunInputs, abort: RunAbort): AsyncIterable<RunEvent>;
  /** The same events as `run`: those already at hand come at once, without a promise each (see `Steps`). */
  steps(ctx: RunContext, inputs: RunInputs, abort: RunAbort): Steps<RunEvent>;
  /** A canceled task of a remote-backed agent that no run holds: the cancel goes to its upstream task (best effort). */
  cancelUpstream?(tenantId: string, agentId: string, metadata: Record<string, unknown>): Promise<void>;
  /** The agent a task taken over runs as: a remote-backed agent of the tenant, or undefined (then it is not resumed). */
  remoteBackedAgent?(tenantId: string, agentId: string): Promise<ResolvedAgent | undefined>;
}

export const ORCHESTRATOR = Symbol('ORCHESTRATOR');
