import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { DomainError, asError } from '../common/errors.js';
import { AsyncQueue, promised, type Steps } from '../common/async-queue.js';
import type { RunAbort } from '../common/run-abort.js';
import { parseHostList, type EgressPolicy } from '../common/net/egress.js';
import { MemoryService } from './tools/memory.service.js';
import { RemoteAgents } from '../a2a-outbound/remote-agents.service.js';
import { TurnLoop, type TurnDeps } from './turn-loop.js';
import { ModelRouter } from './providers/model-router.service.js';
import { echoTurn } from './providers/echo.model.js';
import { ProviderError, type ChatMessage } from './providers/provider.js';
import {
  UPSTREAM_TASK_ID,
  type Orchestrator,
  type RunContext,
  type RunEvent,
  type RunInput,
  type RunInputs,
} from './run-event.js';
import { AgentCatalog } from '../registry/services/agent-catalog.service.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import { McpTool } from '../mcp/mcp-tool.service.js';
import { searchProvider } from './tools/search.tool.js';
import { remoteTurn, type RemoteTurnDeps } from './remote-backend.js';

/** Why a run is aborted when its consumer stopped reading before its turn was over (the task ended elsewhere). */
const ABANDONED = new Error('run abandoned');

/** The end of an iteration. */
const DONE: IteratorResult<RunEvent> = Object.freeze({ value: undefined, done: true });

/** A turn that is one event. */
function only(event: RunEvent): AsyncIterator<RunEvent> {
  let given = false;
  return {
    next: () => {
      const done = given;
      given = true;
      return Promise.resolve(done ? { value: undefined, done: true } : { value: event, done: false });
    },
  };
}

/**
 * Runs an agent turn on the agent's model — a real provider (Anthropic, or
 * any OpenAI-compatible server) or the offline `echo` placeholder — through
 * the turn loop: text forwarded as it streams, slash commands run as tools,
 * their results fed back, delegation to sub-agents.
 */
@Injectable()
export class OrchestratorService implements Orchestrator, OnModuleInit {
  private readonly logger = new Logger('Orchestrator');

  constructor(
    private readonly config: AppConfig,
    private readonly router: ModelRouter,
    private readonly catalog: AgentCatalog,
    private readonly memory: MemoryService,
    private readonly remotes: RemoteAgents,
    private readonly mcp: McpTool,
  ) {
    const fetchPolicy: EgressPolicy = { allowPrivate: false, allowHosts: parseHostList(config.fetchAllowlist) };
    const search = searchProvider(config);
    this.deps = { config, router, catalog, memory, fetchPolicy, remotes, mcp, search };
    this.remote = { remotes, maxEventBytes: config.maxBodyBytes + Math.ceil(config.maxMessageFileBytes / 3) * 4 };
  }

  private readonly remote: RemoteTurnDeps;

  private readonly deps: TurnDeps;

  onModuleInit(): void {
    const real = this.router.configured().filter((p) => p !== 'echo' && p !== 'ollama');
    if (this.config.defaultModel === 'echo') {
      this.logger.warn(
        `the default model is the offline "echo" placeholder, which repeats the input; ` +
          `set ARBITER_DEFAULT_MODEL (configured providers: ${real.length ? real.join(', ') : 'none'}; ollama/<model> needs none)`,
      );
    }
  }

  async cancelUpstream(tenantId: string, agentId: string, metadata: Record<string, unknown>): Promise<void> {
    const agent = await this.catalog.resolve(tenantId, agentId);
    const id = metadata[UPSTREAM_TASK_ID];
    const backend = agent?.constitution.backend;
    if (!backend || typeof id !== 'string') return;
    try {
      const upstream = await this.remotes.upstream(tenantId, backend, AbortSignal.timeout(5_000));
      await this.remotes.cancelUpstream(upstream.client, id);
    } catch (err) {
      this.logger.warn({ agentId, reason: (err as Error).message }, 'could not forward a cancel to the upstream');
    }
  }

  async remoteBackedAgent(tenantId: string, agentId: string): Promise<ResolvedAgent | undefined> {
    const agent = await this.catalog.resolve(tenantId, agentId);
    return agent?.constitution.backend ? agent : undefined;
  }

  run(ctx: RunContext, inputs: RunInputs, abort: RunAbort): AsyncIterable<RunEvent> {
    return { [Symbol.asyncIterator]: () => promised(this.steps(ctx, inputs, abort)) };
  }

  /**
   * The run's events: the first input is read, then the turn that answers it is chosen (`open`). Each
   * step is the chosen turn's own: no generator stands between the turn loop's queue and the consumer, and
   * the events the loop has already queued are handed over at once.
   */
  steps(ctx: RunContext, inputs: RunInputs, abort: RunAbort): Steps<RunEvent> {
    let turn: Steps<RunEvent> | undefined;
    let opening: Promise<Steps<RunEvent>> | undefined;
    // The turn, chosen at once when the first input is at hand; else once it comes.
    const open = (): Steps<RunEvent> | Promise<Steps<RunEvent>> => {
      if (opening) return opening;
      const t = this.open(ctx, inputs, abort);
      if (t instanceof Promise) return (opening = t.then((x) => (turn = x)));
      return (turn = t);
    };
    return {
      next: () => {
        if (turn) return turn.next();
        const t = open();
        return t instanceof Promise ? t.then((x) => x.next()) : t.next();
      },
      return: () => {
        if (turn) return turn.return?.() ?? DONE;
        return opening ? opening.then((t) => t.return?.() ?? DONE) : Promise.resolve(DONE);
      },
    };
  }

  /**
   * The turn that answers the first input: at once when the inputs hand it over at once, else once it comes.
   * A failure to choose one is a rejection, never a throw (as from an async function).
   */
  private open(ctx: RunContext, inputs: RunInputs, abort: RunAbort): Steps<RunEvent> | Promise<Steps<RunEvent>> {
    try {
      const it: Steps<RunInput> = inputs.steps ? inputs.steps() : inputs[Symbol.asyncIterator]();
      const first = it.next();
      return first instanceof Promise
        ? first.then((r) => this.turnFor(ctx, it, r, abort))
        : this.turnFor(ctx, it, first, abort);
    } catch (err) {
      return Promise.reject(asError(err));
    }
  }

  /** The turn for the run's first input (`it` gives the inputs after it, to a turn that reads more). */
  private turnFor(
    ctx: RunContext,
    it: Steps<RunInput>,
    first: IteratorResult<RunInput>,
    abort: RunAbort,
  ): Steps<RunEvent> {
    if (first.done) return only({ type: 'error', code: 'no_input', message: 'the run received no input' });
    const c = ctx.agent.constitution;
    // A remote-backed agent: the upstream answers (gateway mode).
    if (c.backend) return remoteTurn(this.remote, ctx, first.value, abort.signal);
    let target;
    try {
      target = this.router.resolve(c.model);
    } catch (err) {
      const e = err instanceof ProviderError ? err : new ProviderError('model_unavailable', 'model unavailable');
      return only({ type: 'error', code: e.code, message: e.message });
    }
    const word = first.value.text.trim();
    if (target.kind === 'echo' && (word === 'hold' || word === 'ask')) {
      // The echo placeholder's two control words (see echo.model.ts).
      return echoTurn(promised(it), first.value, abort.signal, {
        chunks: this.config.echoChunks,
        delayMs: this.config.echoDelayMs,
      });
    }
    return this.loopTurn(ctx, first.value, abort);
  }

  /** The turn loop's turn on `input`, its events read from the queue the loop pushes them to. */
  private loopTurn(ctx: RunContext, input: RunInput, abort: RunAbort): Steps<RunEvent> {
    // Earlier turns of this task or context, then the new message.
    const messages: ChatMessage[] = [
      ...(ctx.history ?? []).filter((m) => m.content.length > 0),
      { role: 'user', content: input.text },
    ];
    // The loop pushes events from nested and parallel turns; the consumer reads them in order.
    const events = new AsyncQueue<RunEvent>();
    const loop = new TurnLoop(
      this.deps,
      ctx.tenantId,
      abort,
      (e) => events.push(e),
      ctx.durable,
      ctx.mayAct,
      ctx.beforeModelCall,
      ctx.subject,
    );
    let over = false;
    // Outbound calls of the turn (remote agents, MCP servers) act for the caller whose JWT `ctx.subject` holds.
    const finished = loop.agentTurn(ctx.agent, messages, 0).then(
      (content) => {
        over = true;
        // A later turn of this run (a message that arrived meanwhile) sees this one.
        ctx.history = [...(ctx.history ?? []), { role: 'user', content: input.text }, { role: 'assistant', content }];
        events.push({ type: 'done', content });
        events.close();
      },
      (err: unknown) => {
        over = true;
        if (abort.aborted) {
          events.fail(abort.reason instanceof Error ? abort.reason : new Error('aborted'));
          return;
        }
        if (err instanceof DomainError && err.code === 'budget_exhausted') {
          // A budget spent between two model calls: the run ends failed, saying which budget.
          events.push({ type: 'usage', ...loop.usage });
          events.push({ type: 'error', code: 'budget_exhausted', message: err.message });
          events.close();
          return;
        }
        if (err instanceof ProviderError) {
          this.logger.warn({ code: err.code, taskId: ctx.taskId }, err.message);
          events.push({ type: 'usage', ...loop.usage });
          events.push({ type: 'error', code: err.code, message: err.message });
          events.close();
          return;
        }
        events.fail(asError(err));
      },
    );
    // The queue ends only from `finished`'s handlers: once it has, the loop is over.
    const read = events.steps();
    return {
      next: () => read.next(),
      return: () => {
        // The loop is over (its end queued): nothing to stop or wait for.
        if (over) return read.return!();
        // The consumer stopped early (the task ended elsewhere): the run is abandoned, and its loop stops.
        abort.abort(ABANDONED);
        return finished.then(() => read.return!());
      },
    };
  }
}
