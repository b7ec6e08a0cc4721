/** A native event frame's data (`/v1/requests/:id/events`): every frame has `seq` and `created_at`. */
export interface NativeFrame {
  seq?: number;
  created_at?: string;
  agent?: string;
  depth?: number;
  content?: string;
  [k: string]: unknown;
}

/** The spelling the console shows for the log's stable `cancelled` error code: A2A's `canceled`. */
const spell = (code: string): string => (code === 'cancelled' ? 'canceled' : code);

/** One line for a native event (the timeline's text). */
export function describe(name: string, d: Record<string, unknown>): string {
  const s = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
  switch (name) {
    case 'request_received':
      return `${d.continuation ? 'Continuation' : 'Request'} for ${s(d.agent)}: ${s(d.message)}`;
    case 'stream_start':
      return `${s(d.agent)} started`;
    case 'stream_end':
      return `${s(d.agent)} finished streaming`;
    case 'tool_call': {
      // What the log keeps of a call: the tool, whether it worked, its arguments, and any detail (remote task id …).
      const {
        tool,
        ok,
        args,
        depth: _depth,
        agent: _agent,
        seq: _seq,
        request_id: _rid,
        created_at: _at,
        ...detail
      } = d;
      const extra = Object.entries(detail)
        .map(([k, v]) => `${k}: ${s(v)}`)
        .join('; ');
      return `Tool ${s(tool)} ${ok ? 'ok' : 'failed'}${args ? ` — ${s(args)}` : ''}${extra ? ` (${extra})` : ''}`;
    }
    case 'sub_agent_response':
      return `Sub-agent ${s(d.agent)} (depth ${s(d.depth)}) replied: ${s(d.content)}`;
    case 'file':
      return `File ${s(d.path)} (${s(d.media_type)}, ${s(d.size)} bytes)`;
    case 'token_usage':
      return `Usage: ${s(d.input_tokens)} in / ${s(d.output_tokens)} out`;
    case 'input_required':
      return `Input required: ${s(d.content)}`;
    case 'error':
      return `Error ${spell(s(d.error_code))}: ${s(d.message)}`;
    case 'done': {
      if (d.ok) return `Done (${s(d.input_tokens)} in / ${s(d.output_tokens)} out)`;
      const code = spell(s(d.error_code));
      const why = s(d.error);
      if (code === 'canceled') {
        // The reason often says "canceled by …" itself: the word once ("Ended: canceled by client").
        const rest = why.replace(/^canceled\b\s*/, '');
        return `Ended: canceled${!rest ? '' : rest === why ? ` (${why})` : ` ${rest}`}`;
      }
      return `Ended: failed (${code})`;
    }
    default:
      return JSON.stringify(d);
  }
}

/** "850 ms", "2.4 s", "3 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const min = Math.floor(ms / 60_000);
  return `${min} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * Times tool calls and sub-agent replies from the events' `created_at`. The log has no "call started" event: a
 * call starts when its agent's step does — the end of the model call that asked for it (its text, or the usage
 * written right after the call) or the previous call of the same step — and ends at its `tool_call` event. The
 * agent at each depth is followed through the stream: text and calls carry their depth; a usage event belongs to
 * the agent that spoke last, or (a second one with no call between) to a sub-agent that showed no text; a
 * sub-agent's reply returns to its caller. Commands under one `/parallel` share its start.
 */
export class StepClock {
  /** When the current step of the agent at each depth began. */
  private readonly mark = new Map<number, number>();
  /** Depths whose model call has ended with no tool call since. */
  private readonly modelEnded = new Set<number>();
  /** The start shared by the commands of a `/parallel` at each depth. */
  private readonly parallel = new Map<number, number>();
  private depth = 0;

  /** Feeds one event; the time it closes (a tool call's or a sub-agent's, in ms), if it closes one. */
  see(name: string, d: NativeFrame): number | undefined {
    const at = d.created_at ? Date.parse(d.created_at) : NaN;
    if (!Number.isFinite(at)) return undefined;
    const depth = typeof d.depth === 'number' ? d.depth : 0;
    switch (name) {
      case 'request_received':
      case 'stream_start':
      case 'input_required':
        this.reset(at);
        return undefined;
      case 'text':
        this.step(depth, at);
        return undefined;
      case 'token_usage': {
        if (this.modelEnded.has(this.depth)) this.depth += 1;
        this.step(this.depth, at);
        this.modelEnded.add(this.depth);
        return undefined;
      }
      case 'tool_call': {
        const start = this.parallel.get(depth) ?? this.startOf(depth);
        this.depth = depth;
        this.modelEnded.delete(depth);
        if (d.tool === '/parallel') {
          // Written as its commands start: they are timed, not it.
          this.parallel.set(depth, at);
          return undefined;
        }
        if (!this.parallel.has(depth)) this.mark.set(depth, at);
        return start === undefined ? undefined : at - start;
      }
      case 'sub_agent_response': {
        // The caller is one level up; its call began when its step did.
        const caller = Math.max(0, depth - 1);
        const start = this.parallel.get(caller) ?? this.startOf(caller);
        for (const k of [...this.mark.keys()]) if (k > caller) this.mark.delete(k);
        for (const k of [...this.modelEnded]) if (k > caller) this.modelEnded.delete(k);
        this.depth = caller;
        return start === undefined ? undefined : at - start;
      }
      default:
        return undefined;
    }
  }

  private reset(at: number): void {
    this.mark.clear();
    this.modelEnded.clear();
    this.parallel.clear();
    this.depth = 0;
    this.mark.set(0, at);
  }

  /** The agent at `depth` is in a new step (it speaks, or its model call ended). */
  private step(depth: number, at: number): void {
    this.depth = depth;
    this.mark.set(depth, at);
    this.parallel.delete(depth);
    this.modelEnded.delete(depth);
  }

  /** The start of the step at `depth`, or at the nearest depth above it that has one. */
  private startOf(depth: number): number | undefined {
    for (let k = depth; k >= 0; k--) {
      const m = this.mark.get(k);
      if (m !== undefined) return m;
    }
    return undefined;
  }
}
