import { capBytes } from '../common/text.js';
import { MASTER_AGENT_ID, mcpServerGrants, toolGrants } from '../registry/constitution.js';
import type { ResolvedAgent } from '../registry/services/agents.js';
import { isKnownTool, KNOWN_TOOLS } from '../registry/tools.js';
import { fail, inSpan } from '../tracing/spans.js';
import { ProviderError, type ChatMessage } from './providers/provider.js';
import type { RunEvent } from './run-event.js';
import { fetchAsText } from './tools/fetch.tool.js';
import { memAsText } from './tools/memory.tool.js';
import { searchAsText } from './tools/search.tool.js';
import { fileOfWrite } from './tools/write.tool.js';
import type { TurnDeps } from './turn-loop.js';
import { BLOCK_VERBS, parseCommandLine, type Writ } from './writs.js';

/** Per-result cap, and the budget for all results of one model response. */
export const RESULT_CAP = 16 * 1024;
export const STEP_BUDGET = 32 * 1024;
export const MAX_PARALLEL = 16;
/** Commands one model response may run; the rest are answered together, not run (nor logged one by one). */
export const MAX_COMMANDS = 32;
const MAX_FILES_PER_RUN = 32;

/** `[/verb args]` … `[END VERB]` around a result. */
export function frame(verb: string, args: string, body: string): string {
  const head = args.length > 200 ? `${args.slice(0, 200)}…` : args;
  return `[/${verb}${head ? ` ${head}` : ''}]\n${body}\n[END ${verb.toUpperCase()}]`;
}

export const short = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s);

/** What an MCP call may reach for this agent: its tenant's servers, narrowed by its grants. */
export const mcpCallerOf = (
  tenantId: string,
  agent: ResolvedAgent,
): { tenantId: string; servers: string[] | null } => ({
  tenantId,
  servers: mcpServerGrants(agent.constitution),
});

/**
 * The slash commands of one model response, run in order within the step's
 * output budget: each tool a span and a `tool_call` event, `/parallel`'s
 * lines at once, `/agent` as a nested turn of another agent (`turn`), each
 * result framed for the next model call.
 */
export class CommandStep {
  private files = 0;

  constructor(
    private readonly deps: TurnDeps,
    private readonly tenantId: string,
    private readonly signal: AbortSignal,
    private readonly emit: (event: RunEvent) => void,
    /** A nested agent turn (delegation), through the same loop. */
    private readonly turn: (agent: ResolvedAgent, messages: ChatMessage[], depth: number) => Promise<string>,
  ) {}

  /**
   * The commands of a response beyond `MAX_COMMANDS`: not run, answered by
   * one line, and logged as one failed `tool_call` that counts them (a reply
   * of thousands of command lines costs one event, not thousands).
   */
  beyond(agent: ResolvedAgent, extra: Writ[], depth: number): string[] {
    const first = extra[0];
    if (!first) return [];
    const n = extra.length;
    this.emit({
      type: 'tool_call',
      tool: `/${first.verb}`,
      args: `${short(first.args)} (and ${n - 1} more: not run)`,
      ok: false,
      depth,
      agent: agent.id,
    });
    return [`ERR: ${n} more command${n === 1 ? '' : 's'} not run: at most ${MAX_COMMANDS} run per response`];
  }

  /** Runs one response's commands in order; returns their framed results within the step budget. */
  async runStep(agent: ResolvedAgent, writs: Writ[], depth: number): Promise<string> {
    const out: string[] = [];
    let used = 0;
    for (const w of writs) {
      this.signal.throwIfAborted();
      const result = await this.runWrit(agent, w, depth);
      const left = STEP_BUDGET - used;
      const framed =
        left <= 256
          ? frame(w.verb, w.args, '... [truncated: the step output budget of 32 KiB is spent]')
          : capBytes(result, left);
      used += Buffer.byteLength(framed) + 1;
      out.push(framed);
    }
    return out.join('\n');
  }

  /** One command, framed; `/parallel` frames its children inside its own frame. */
  private async runWrit(agent: ResolvedAgent, w: Writ, depth: number): Promise<string> {
    if (w.verb === 'parallel') {
      const body = await this.parallel(agent, w, depth);
      return frame(w.verb, w.args, body);
    }
    const detail: Record<string, string> = {};
    const tool = isKnownTool(`/${w.verb}`) ? `/${w.verb}` : 'unknown';
    // A span per tool call: an outbound /a2a, /mcp or /fetch request is its child and carries its traceparent.
    const body = await inSpan(
      `tool ${tool}`,
      { attributes: { 'arbiter.tool': tool, 'arbiter.agent_id': agent.id, 'arbiter.depth': depth } },
      async (span) => {
        const result = capBytes(await this.runTool(agent, w, depth, detail), RESULT_CAP);
        if (result.startsWith('ERR:')) fail(span, undefined, 'tool error');
        return result;
      },
    );
    this.emit({
      type: 'tool_call',
      tool: `/${w.verb}`,
      args: short(w.args),
      ok: !body.startsWith('ERR:'),
      depth,
      agent: agent.id,
      ...(Object.keys(detail).length ? { detail } : {}),
    });
    return frame(w.verb, w.args, body);
  }

  private async parallel(agent: ResolvedAgent, w: Writ, depth: number): Promise<string> {
    const refusal = this.refusal(agent, w);
    if (refusal) {
      this.emit({ type: 'tool_call', tool: '/parallel', args: '', ok: false, depth, agent: agent.id });
      return refusal;
    }
    const lines = (w.body ?? '').split('\n').filter((l) => l.trim().length > 0);
    const problem = w.error
      ? `ERR: ${w.error}`
      : lines.length === 0
        ? 'ERR: usage: /parallel, one command per line, then /endparallel'
        : lines.length > MAX_PARALLEL
          ? `ERR: at most ${MAX_PARALLEL} commands in one /parallel (got ${lines.length})`
          : undefined;
    const children: (Writ | string)[] = lines.map((line) => {
      const cmd = parseCommandLine(line);
      if (!cmd) return `ERR: not a command: ${short(line.trim())}`;
      if (cmd.verb === 'parallel' || BLOCK_VERBS[cmd.verb]) return `ERR: /${cmd.verb} cannot run inside /parallel`;
      return cmd;
    });
    this.emit({ type: 'tool_call', tool: '/parallel', args: '', ok: !problem, depth, agent: agent.id });
    if (problem) return problem;
    const results = await Promise.all(
      children.map((child) =>
        typeof child === 'string' ? Promise.resolve(frame('error', '', child)) : this.runWrit(agent, child, depth),
      ),
    );
    return results.map((r) => capBytes(r, RESULT_CAP + 512)).join('\n');
  }

  /** `ERR: capability not granted …` when the agent's `/…` capabilities do not include the verb. */
  private refusal(agent: ResolvedAgent, w: Writ): string | undefined {
    const grants = toolGrants(agent.constitution);
    if (grants.length > 0 && !grants.includes(`/${w.verb}`) && KNOWN_TOOLS.includes(`/${w.verb}` as never)) {
      return `ERR: capability not granted: /${w.verb} (this agent may use ${grants.join(', ')})`;
    }
    return undefined;
  }

  /** A tool's result body (`ERR: …` on failure). */
  private async runTool(agent: ResolvedAgent, w: Writ, depth: number, detail: Record<string, string>): Promise<string> {
    if (!KNOWN_TOOLS.includes(`/${w.verb}` as never)) {
      return `ERR: unknown command /${w.verb}; known commands: ${KNOWN_TOOLS.join(', ')}`;
    }
    const refused = this.refusal(agent, w);
    if (refused) return refused;
    if (w.error) return `ERR: ${w.error}`;
    switch (w.verb) {
      case 'agent':
        return this.delegate(agent, w.args, depth);
      case 'write':
        return this.write(agent, w, depth);
      case 'mem':
        return memAsText(this.deps.memory, this.tenantId, w.args);
      case 'fetch':
        return fetchAsText(w.args, this.deps.fetchPolicy, this.deps.config.fetchTimeoutMs, this.signal);
      case 'a2a': {
        const r = await this.deps.remotes.tool(w.args, this.tenantId, this.signal);
        if (r.remoteTaskId) detail.remote_task_id = r.remoteTaskId;
        return r.body;
      }
      case 'mcp':
        return this.deps.mcp.run(w.args, mcpCallerOf(this.tenantId, agent), this.signal);
      case 'search':
        return searchAsText(w.args, this.deps.search, this.deps.config.searchResults, this.signal);
      default:
        return `ERR: unknown command /${w.verb}`;
    }
  }

  private async delegate(caller: ResolvedAgent, args: string, depth: number): Promise<string> {
    const m = /^([A-Za-z0-9_-]{1,64})\s+([\s\S]+)$/.exec(args);
    if (!m?.[1] || !m[2]?.trim()) return 'ERR: usage: /agent <id> <task>';
    const [, id, task] = m;
    const max = this.deps.config.maxDelegationDepth;
    if (depth + 1 > max) return `ERR: delegation depth limit reached (at most ${max} levels)`;
    if (id === MASTER_AGENT_ID) return `ERR: ${MASTER_AGENT_ID} is the master agent and cannot be delegated to`;
    if (id === caller.id) return 'ERR: an agent cannot delegate to itself';
    const target = await this.deps.catalog.resolve(this.tenantId, id);
    if (!target) return `ERR: no agent named '${id}'`;
    const prelude =
      `[Delegated by agent '${caller.id}' (delegation depth ${depth + 1} of at most ${max}). ` +
      `Your reply goes back to '${caller.id}', not to the user: answer the task directly.]`;
    // A remote-backed agent's upstream gets the task alone: the prelude speaks to a model of this tenant's.
    const content = target.constitution.backend ? task.trim() : `${prelude}\n\n${task.trim()}`;
    let reply: string;
    try {
      reply = await this.turn(target, [{ role: 'user', content }], depth + 1);
    } catch (err) {
      this.signal.throwIfAborted();
      if (err instanceof ProviderError) return `ERR: agent '${id}' failed: ${err.code}`;
      throw err;
    }
    this.emit({ type: 'sub_agent_response', agent: id, depth: depth + 1, content: reply });
    return reply;
  }

  /** `/write`: a file for the user (see `fileOfWrite`), at most `MAX_FILES_PER_RUN` per run. */
  private write(agent: ResolvedAgent, w: Writ, depth: number): string {
    const file = fileOfWrite(w.args, w.body ?? '', this.deps.config.maxWriteBytes);
    if ('error' in file) return `ERR: ${file.error}`;
    if (this.files >= MAX_FILES_PER_RUN) return `ERR: at most ${MAX_FILES_PER_RUN} files per request`;
    this.files++;
    this.emit({ type: 'file', ...file, depth, agent: agent.id });
    return `wrote ${file.path} (${file.mediaType}, ${file.bytes.length} bytes); the user receives it as a file`;
  }
}
