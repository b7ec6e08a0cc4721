import type { AppConfig } from '../config/app-config.js';
import type { Latch } from '../common/latch.js';
import type { RunAbort } from '../common/run-abort.js';
import type { SubjectToken } from '../common/subject-token.js';
import type { EgressPolicy } from '../common/net/egress.js';
import type { RemoteAgents } from '../a2a-outbound/remote-agents.service.js';
import type { McpTool } from '../mcp/mcp-tool.service.js';
import { onBehalfOf } from '../outbound-auth/caller-context.js';
import { MASTER_AGENT_ID, toolGrants } from '../registry/constitution.js';
import type { AgentCatalog } from '../registry/services/agent-catalog.service.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import { CommandStep, frame, MAX_COMMANDS, mcpCallerOf, short } from './command-step.js';
import { EchoProvider } from './providers/echo.model.js';
import type { ModelRouter } from './providers/model-router.service.js';
import { ProviderError, type ChatMessage, type CompletionEvent, type Provider } from './providers/provider.js';
import type { RunContext, RunEvent } from './run-event.js';
import { systemPrompt } from './system-prompt.js';
import { toolHelp } from './tool-help.js';
import type { MemoryService } from './tools/memory.service.js';
import type { SearchProvider } from './tools/search.tool.js';
import { WritScanner } from './writs.js';

/** The longest answer one model call may give (characters): a provider streaming on and on is cut off here. */
const MAX_ANSWER = 16 * 1024 * 1024;

export interface TurnDeps {
  config: AppConfig;
  router: ModelRouter;
  catalog: AgentCatalog;
  memory: MemoryService;
  fetchPolicy: EgressPolicy;
  remotes: RemoteAgents;
  mcp: McpTool;
  /** The `/search` provider; undefined when none is configured. */
  search: SearchProvider | undefined;
}

/**
 * One run's agent turns: the model streams, the visible text goes out as it
 * arrives, the slash commands in the response run, their results go back
 * as the next user message, until the model answers without a command or
 * the turn's model-call budget is spent. `/agent` runs a nested turn of
 * another agent (one level deeper) through the same loop.
 */
export class TurnLoop {
  /** Tokens over every model call of the run, sub-agents included. */
  readonly usage = { inputTokens: 0, outputTokens: 0 };
  /** Model calls reported (usage events with a call) so far. */
  private reported = 0;
  /** Made when a response first has commands to run: most turns have none. */
  private commandStep: CommandStep | undefined;

  constructor(
    private readonly deps: TurnDeps,
    private readonly tenantId: string,
    /** The run's abort: asked at every step; its signal is read only to hand it on (a call out, the echo's timer). */
    private readonly abort: RunAbort,
    private readonly emit: (event: RunEvent) => void,
    /** The task is stored: nothing leaves the process before (see `RunContext.durable`). */
    private readonly durable?: Latch,
    /** The replica may act (see `RunContext.mayAct`). */
    private readonly mayAct?: (signal: AbortSignal) => Promise<void>,
    /** The budgets allow another call (see `RunContext.beforeModelCall`). */
    private readonly beforeModelCall?: RunContext['beforeModelCall'],
    /** The caller whose JWT the turn's outbound calls (remote agents, MCP servers) act for (see `acting`). */
    private readonly subject?: SubjectToken,
  ) {}

  private get commands(): CommandStep {
    return (this.commandStep ??= new CommandStep(this.deps, this.tenantId, this.abort.signal, this.emit, (a, m, d) =>
      this.agentTurn(a, m, d),
    ));
  }

  /**
   * Waits until the task is stored and the replica may act (its leases
   * stand); then a model or a tool outside the process may be called.
   */
  private async stored(): Promise<void> {
    await this.durable?.wait();
    await this.mayAct?.(this.abort.signal);
    this.abort.throwIfAborted();
  }

  /**
   * Runs `agent`'s turn on `messages` (the last is the new user message).
   * Returns the reply. Model failures throw `ProviderError`.
   */
  async agentTurn(agent: ResolvedAgent, messages: ChatMessage[], depth: number): Promise<string> {
    const c = agent.constitution;
    const backend = c.backend;
    if (backend) {
      // A remote-backed agent delegated to: its upstream answers, once the task is stored.
      await this.stored();
      const text = messages[messages.length - 1]?.content ?? '';
      return (await this.acting(() => this.deps.remotes.callBackend(this.tenantId, backend, text, this.abort.signal)))
        .body;
    }
    const target = this.deps.router.resolve(c.model);
    let echo: EchoProvider | undefined;
    const provider: Provider =
      target.kind === 'echo'
        ? (echo = new EchoProvider({ chunks: this.deps.config.echoChunks, delayMs: this.deps.config.echoDelayMs }))
        : target.provider;
    const model = target.kind === 'echo' ? 'echo' : target.model;
    // A model outside the process (and the remote cards its prompt may list) is called once the task is stored.
    if (target.kind !== 'echo') await this.stored();
    // The echo placeholder never reads the prompt: skip the roster's catalogue and card lookups for it.
    const system = target.kind === 'echo' ? systemPrompt(c) : await this.acting(() => this.systemFor(agent, depth));
    const convo = [...messages];
    const maxCalls = this.deps.config.maxModelCalls;
    let shownBefore = false;
    let lastShown = '';
    const allVisible: string[] = [];
    for (let call = 1; ; call++) {
      this.abort.throwIfAborted();
      const scanner = new WritScanner();
      let raw = '';
      let separated = !shownBefore;
      const show = (text: string): void => {
        if (!text) return;
        if (!separated) {
          // A paragraph break between what successive model calls show.
          const gap = lastShown.endsWith('\n\n') ? '' : lastShown.endsWith('\n') ? '\n' : '\n\n';
          if (gap) this.emit({ type: 'text', delta: gap, depth, agent: agent.id });
          separated = true;
        }
        shownBefore = true;
        lastShown = text;
        this.emit({ type: 'text', delta: text, depth, agent: agent.id });
      };
      if (target.kind !== 'echo') {
        // Each call outside the process first checks the budgets against the spend committed so far.
        const allowed = this.beforeModelCall?.(agent.id, this.reported, this.abort.signal);
        if (allowed) await allowed;
        this.abort.throwIfAborted();
      }
      const req = { model, system, messages: mergeRoles(convo), maxTokens: c.max_tokens, temperature: c.temperature };
      // A provider that reports no usage leaves the call at 0 tokens: it is accounted all the same.
      let callUsage = { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
      const take = (ev: CompletionEvent): void => {
        if (ev.type === 'text') {
          raw += ev.delta;
          if (raw.length > MAX_ANSWER) {
            throw new ProviderError('provider_error', `${provider.name} sent an answer longer than 16 MiB`);
          }
          show(scanner.push(ev.delta));
        } else if (ev.type === 'usage') {
          callUsage = {
            inputTokens: ev.inputTokens,
            outputTokens: ev.outputTokens,
            cachedTokens: ev.cachedTokens ?? 0,
          };
        }
      };
      if (echo?.immediate) {
        // An answer at hand is taken whole, without a promise per chunk.
        for (const ev of echo.answer(req)) take(ev);
      } else {
        const stream = echo
          ? echo.complete(req, this.abort.signal)
          : this.deps.router.stream(provider, req, this.abort.signal);
        for await (const ev of stream) take(ev);
      }
      const end = scanner.end();
      show(end.tail);
      this.usage.inputTokens += callUsage.inputTokens;
      this.usage.outputTokens += callUsage.outputTokens;
      const { inputTokens, outputTokens } = this.usage;
      if (target.kind !== 'echo') this.reported++;
      this.emit(
        target.kind === 'echo'
          ? { type: 'usage', inputTokens, outputTokens }
          : {
              type: 'usage',
              inputTokens,
              outputTokens,
              call: { agent: agent.id, provider: provider.name, model, ...callUsage },
            },
      );
      allVisible.push(end.visible);
      if (end.writs.length === 0) {
        const reply = end.visible.trim() ? end.visible : allVisible.join('\n\n');
        return reply.trimEnd();
      }
      const writs = end.writs.slice(0, MAX_COMMANDS);
      const extra = end.writs.slice(MAX_COMMANDS);
      if (call >= maxCalls) {
        // Never dropped silently: each left-over command is answered, in the reply too.
        const refused = writs.map((w) => {
          this.emit({ type: 'tool_call', tool: `/${w.verb}`, args: short(w.args), ok: false, depth, agent: agent.id });
          return frame(w.verb, w.args, 'ERR: turn limit reached');
        });
        const note = [...refused, ...this.commands.beyond(agent, extra, depth)].join('\n');
        show(`${end.visible.trim() ? '\n\n' : ''}${note}`);
        return `${end.visible.trimEnd()}${end.visible.trim() ? '\n\n' : ''}${note}`;
      }
      await this.stored();
      const results = [
        await this.acting(() => this.commands.runStep(agent, writs, depth)),
        ...this.commands.beyond(agent, extra, depth),
      ].join('\n');
      convo.push({ role: 'assistant', content: raw }, { role: 'user', content: results });
    }
  }

  /**
   * Outbound calls act for the caller who started the run: only they, the tools, the remote cards of the
   * prompt and a delegated upstream, read the caller (a `token_exchange` credential exchanges its JWT).
   * Entered around them rather than the whole turn, so that a turn that makes none keeps Node's promise
   * hooks off.
   */
  private acting<T>(fn: () => Promise<T>): Promise<T> {
    return onBehalfOf(this.subject, fn);
  }

  private async systemFor(agent: ResolvedAgent, depth: number): Promise<string> {
    let system = systemPrompt(agent.constitution);
    const tools = toolHelp(agent, depth < this.deps.config.maxDelegationDepth);
    if (tools) system += `\n\n${tools}`;
    if (agent.id === MASTER_AGENT_ID) {
      const [roster, remote] = await Promise.all([
        this.deps.catalog.roster(this.tenantId),
        this.deps.remotes.roster(this.tenantId, this.abort.signal),
      ]);
      if (roster) system += `\n\n${roster}`;
      if (remote) system += `\n\n${remote}`;
      const grants = toolGrants(agent.constitution);
      const mcp =
        grants.length === 0 || grants.includes('/mcp')
          ? await this.deps.mcp.roster(mcpCallerOf(this.tenantId, agent))
          : '';
      if (mcp) system += `\n\n${mcp}`;
    }
    return system;
  }
}

/** Consecutive messages of one role merged (providers differ on whether they accept them). */
function mergeRoles(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (prev && prev.role === m.role)
      out[out.length - 1] = { role: m.role, content: `${prev.content}\n\n${m.content}` };
    else out.push({ ...m });
  }
  return out;
}
