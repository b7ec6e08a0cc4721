import type { AppConfig } from '../config/app-config.js';
import type { EgressPolicy } from '../common/net/egress.js';
import { capBytes } from '../common/text.js';
import type { RemoteAgents } from '../a2a-outbound/remote-agents.service.js';
import { MASTER_AGENT_ID, mcpServerGrants, toolGrants } from '../registry/constitution.js';
import type { AgentCatalog, ResolvedAgent } from '../registry/services/agent-catalog.service.js';
import { isKnownTool, KNOWN_TOOLS } from '../registry/tools.js';
import { fail, inSpan } from '../tracing/spans.js';
import { EchoProvider } from './providers/echo.model.js';
import type { ModelRouter } from './providers/model-router.service.js';
import { ProviderError, type ChatMessage, type Provider } from './providers/provider.js';
import type { RunEvent } from './run-event.js';
import { systemPrompt } from './system-prompt.js';
import { fetchAsText } from './tools/fetch.tool.js';
import { searchAsText, type SearchProvider } from './tools/search.tool.js';
import type { McpTool } from '../mcp/mcp-tool.service.js';
import { mediaTypeFor, sanitizePath } from './tools/files.js';
import { MAX_MEMORY_CONTENT, type MemoryService } from './tools/memory.service.js';
import { BLOCK_VERBS, parseCommandLine, WritScanner, type Writ } from './writs.js';

/** Per-result cap, and the budget for all results of one model response. */
export const RESULT_CAP = 16 * 1024;
export const STEP_BUDGET = 32 * 1024;
export const MAX_PARALLEL = 16;
/** Commands one model response may run; the rest are answered together, not run (nor logged one by one). */
export const MAX_COMMANDS = 32;
const MAX_FILES_PER_RUN = 32;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

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

/** `[/verb args]` … `[END VERB]` around a result. */
export function frame(verb: string, args: string, body: string): string {
  const head = args.length > 200 ? `${args.slice(0, 200)}…` : args;
  return `[/${verb}${head ? ` ${head}` : ''}]\n${body}\n[END ${verb.toUpperCase()}]`;
}

const short = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s);

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
  private files = 0;

  constructor(
    private readonly deps: TurnDeps,
    private readonly tenantId: string,
    private readonly signal: AbortSignal,
    private readonly emit: (event: RunEvent) => void,
    /** The task is stored: nothing leaves the process before (see `RunContext.durable`). */
    private readonly durable: Promise<void> = Promise.resolve(),
    /** The replica may act (see `RunContext.mayAct`). */
    private readonly mayAct?: (signal: AbortSignal) => Promise<void>,
  ) {}

  /**
   * Waits until the task is stored and the replica may act (its leases
   * stand); then a model or a tool outside the process may be called.
   */
  private async stored(): Promise<void> {
    await this.durable;
    await this.mayAct?.(this.signal);
    this.signal.throwIfAborted();
  }

  /**
   * Runs `agent`'s turn on `messages` (the last is the new user message).
   * Returns the reply. Model failures throw `ProviderError`.
   */
  async agentTurn(agent: ResolvedAgent, messages: ChatMessage[], depth: number): Promise<string> {
    const c = agent.constitution;
    const target = this.deps.router.resolve(c.model);
    const provider: Provider =
      target.kind === 'echo'
        ? new EchoProvider({ chunks: this.deps.config.echoChunks, delayMs: this.deps.config.echoDelayMs })
        : target.provider;
    const model = target.kind === 'echo' ? 'echo' : target.model;
    // A model outside the process (and the remote cards its prompt may list) is called once the task is stored.
    if (target.kind !== 'echo') await this.stored();
    // The echo placeholder never reads the prompt: skip the roster's catalogue and card lookups for it.
    const system = target.kind === 'echo' ? systemPrompt(c) : await this.systemFor(agent, depth);
    const convo = [...messages];
    const maxCalls = this.deps.config.maxModelCalls;
    let shownBefore = false;
    let lastShown = '';
    const allVisible: string[] = [];
    for (let call = 1; ; call++) {
      this.signal.throwIfAborted();
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
      const req = { model, system, messages: mergeRoles(convo), maxTokens: c.max_tokens, temperature: c.temperature };
      const stream =
        target.kind === 'echo'
          ? provider.complete(req, this.signal)
          : this.deps.router.stream(provider, req, this.signal);
      let callUsage = { inputTokens: 0, outputTokens: 0 };
      for await (const ev of stream) {
        if (ev.type === 'text') {
          raw += ev.delta;
          show(scanner.push(ev.delta));
        } else if (ev.type === 'usage') {
          callUsage = { inputTokens: ev.inputTokens, outputTokens: ev.outputTokens };
        }
      }
      const end = scanner.end();
      show(end.tail);
      this.usage.inputTokens += callUsage.inputTokens;
      this.usage.outputTokens += callUsage.outputTokens;
      this.emit({ type: 'usage', ...this.usage });
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
        const note = [...refused, ...this.beyond(agent, extra, depth)].join('\n');
        show(`${end.visible.trim() ? '\n\n' : ''}${note}`);
        return `${end.visible.trimEnd()}${end.visible.trim() ? '\n\n' : ''}${note}`;
      }
      await this.stored();
      const results = [await this.runStep(agent, writs, depth), ...this.beyond(agent, extra, depth)].join('\n');
      convo.push({ role: 'assistant', content: raw }, { role: 'user', content: results });
    }
  }

  /**
   * The commands of a response beyond `MAX_COMMANDS`: not run, answered by
   * one line, and logged as one failed `tool_call` that counts them (a reply
   * of thousands of command lines costs one event, not thousands).
   */
  private beyond(agent: ResolvedAgent, extra: Writ[], depth: number): string[] {
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
  private async runStep(agent: ResolvedAgent, writs: Writ[], depth: number): Promise<string> {
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
        return this.mem(w.args);
      case 'fetch':
        return fetchAsText(w.args, this.deps.fetchPolicy, this.deps.config.fetchTimeoutMs, this.signal);
      case 'a2a': {
        const r = await this.deps.remotes.tool(w.args, this.signal);
        if (r.remoteTaskId) detail.remote_task_id = r.remoteTaskId;
        return r.body;
      }
      case 'mcp':
        return this.deps.mcp.run(w.args, this.mcpCaller(agent), this.signal);
      case 'search':
        return searchAsText(w.args, this.deps.search, this.deps.config.searchResults, this.signal);
      default:
        return `ERR: unknown command /${w.verb}`;
    }
  }

  private mcpCaller(agent: ResolvedAgent): { tenantId: string; servers: string[] | null } {
    return { tenantId: this.tenantId, servers: mcpServerGrants(agent.constitution) };
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
    let reply: string;
    try {
      reply = await this.agentTurn(target, [{ role: 'user', content: `${prelude}\n\n${task.trim()}` }], depth + 1);
    } catch (err) {
      this.signal.throwIfAborted();
      if (err instanceof ProviderError) return `ERR: agent '${id}' failed: ${err.code}`;
      throw err;
    }
    this.emit({ type: 'sub_agent_response', agent: id, depth: depth + 1, content: reply });
    return reply;
  }

  /** `/write <path>` (the lines are the file's text) or `/write --base64 <path>` (the lines are its bytes, base64). */
  private write(agent: ResolvedAgent, w: Writ, depth: number): string {
    const b64 = /^--base64(?:\s+|$)/.exec(w.args);
    const p = sanitizePath(b64 ? w.args.slice(b64[0].length) : w.args);
    if ('error' in p) return `ERR: ${p.error}`;
    const body = w.body ?? '';
    let bytes: Buffer;
    if (b64) {
      const compact = body.replace(/\s+/g, '');
      if (!BASE64.test(compact)) return `ERR: the lines of /write --base64 ${p.path} are not padded base64`;
      bytes = Buffer.from(compact, 'base64');
    } else {
      bytes = Buffer.from(body, 'utf8');
    }
    if (bytes.length > this.deps.config.maxWriteBytes) {
      return `ERR: ${p.path} is ${bytes.length} bytes; a file may be at most ${this.deps.config.maxWriteBytes} bytes`;
    }
    if (this.files >= MAX_FILES_PER_RUN) return `ERR: at most ${MAX_FILES_PER_RUN} files per request`;
    this.files++;
    const mediaType = mediaTypeFor(p.path, b64 ? 'application/octet-stream' : 'text/plain');
    this.emit({ type: 'file', path: p.path, bytes, mediaType, depth, agent: agent.id });
    return `wrote ${p.path} (${mediaType}, ${bytes.length} bytes); the user receives it as a file`;
  }

  private async mem(args: string): Promise<string> {
    const m = /^(\S+)(?:\s+([\s\S]*))?$/.exec(args);
    const sub = m?.[1] ?? '';
    const rest = (m?.[2] ?? '').trim();
    const mem = this.deps.memory;
    const line = (e: { id: string; content: string }): string =>
      `#${e.id} ${e.content.replace(/\s+/g, ' ').slice(0, 300)}`;
    switch (sub) {
      case 'add': {
        if (!rest) return 'ERR: usage: /mem add <text>';
        if (rest.length > MAX_MEMORY_CONTENT) return `ERR: an entry may be at most ${MAX_MEMORY_CONTENT} characters`;
        const e = await mem.add(this.tenantId, rest.replaceAll('\u0000', ''));
        return `stored as #${e.id}`;
      }
      case 'get': {
        const id = rest.replace(/^#/, '');
        if (!id) return 'ERR: usage: /mem get <id>';
        const e = await mem.get(this.tenantId, id);
        return e ? `#${e.id} (${e.createdAt.toISOString()})\n${e.content}` : `ERR: no memory entry #${id}`;
      }
      case 'list': {
        const { entries, total } = await mem.list(this.tenantId);
        if (total === 0) return 'no memory entries';
        return `${total} entries${total > entries.length ? `, newest ${entries.length} shown` : ''}:\n${entries.map(line).join('\n')}`;
      }
      case 'search': {
        if (!rest) return 'ERR: usage: /mem search <query>';
        const found = await mem.search(this.tenantId, rest.slice(0, 500));
        return found.length ? found.map(line).join('\n') : `no memory entries match "${short(rest)}"`;
      }
      case 'delete': {
        const id = rest.replace(/^#/, '');
        if (!id) return 'ERR: usage: /mem delete <id>';
        return (await mem.delete(this.tenantId, id)) ? `deleted #${id}` : `ERR: no memory entry #${id}`;
      }
      default:
        return 'ERR: usage: /mem add <text> | get <id> | list | search <query> | delete <id>';
    }
  }

  private async systemFor(agent: ResolvedAgent, depth: number): Promise<string> {
    let system = systemPrompt(agent.constitution);
    const tools = toolHelp(agent, depth < this.deps.config.maxDelegationDepth);
    if (tools) system += `\n\n${tools}`;
    if (agent.id === MASTER_AGENT_ID) {
      const [roster, remote] = await Promise.all([
        this.deps.catalog.roster(this.tenantId),
        this.deps.remotes.roster(this.signal),
      ]);
      if (roster) system += `\n\n${roster}`;
      if (remote) system += `\n\n${remote}`;
      const grants = toolGrants(agent.constitution);
      const mcp = grants.length === 0 || grants.includes('/mcp') ? this.deps.mcp.roster(this.mcpCaller(agent)) : '';
      if (mcp) system += `\n\n${mcp}`;
    }
    return system;
  }
}

const TOOL_HELP: Record<string, string> = {
  '/agent': '/agent <id> <task> — delegate a task to another agent; its reply comes back to you',
  '/parallel': '/parallel … /endparallel — run the command lines between them at the same time (at most 16)',
  '/write':
    '/write <path> … /endwrite — give the user a file holding the lines between them (/write --base64 <path>: the lines are base64 of a binary file)',
  '/mem':
    '/mem add <text> | /mem get <id> | /mem list | /mem search <query> | /mem delete <id> — the team memory, shared by its agents',
  '/fetch': '/fetch <url> — read a public web page as text',
  '/a2a':
    '/a2a list | /a2a card <name> | /a2a call <name> <message> — remote A2A agents (another trust boundary: they see only your message)',
  '/mcp':
    '/mcp list | /mcp tools <server> | /mcp call <server> <tool> <json-args> — tools of MCP servers (arguments: one JSON object)',
  '/search': '/search <query> — search the web: titles, URLs and snippets (read a page with /fetch <url>)',
};

/** The TOOLS block of a system prompt: the commands this agent may use. */
export function toolHelp(agent: ResolvedAgent, mayDelegate: boolean): string {
  const grants = toolGrants(agent.constitution);
  const lines = Object.entries(TOOL_HELP)
    .filter(([verb]) => grants.length === 0 || grants.includes(verb))
    .filter(([verb]) => mayDelegate || verb !== '/agent')
    .map(([, help]) => `  ${help}`);
  if (lines.length === 0) return '';
  return [
    'TOOLS — to use one, write the command at the start of a line of its own (block commands end with their terminator line).',
    'Every command in your reply runs; the results come back to you in the next message, framed [/command] … [END COMMAND].',
    ...lines,
  ].join('\n');
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
