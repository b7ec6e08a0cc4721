import {
  UPSTREAM_CONTEXT_ID,
  UPSTREAM_TASK_ID,
  type RunContext,
  type RunEvent,
  type RunInput,
} from '../../orchestrator/run-event.js';
import { isoTime } from '../../common/iso-time.js';
import { storable } from '../../common/text.js';
import { extend } from '../../common/extend.js';
import { ARBITER_ARTIFACT_META, type ArtifactJson, type MessageJson, type PartJson } from '../../common/a2a-json.js';
import type { TaskEventBody } from '../task-events.js';
import { describeStoredFile, fileRefOf, newFile, storeFileParts, type NewTaskFile } from '../task-files.js';
import type { CallPrice } from '../../usage/price-book.js';
import { accountedCall } from '../../usage/usage-call.js';

/**
 * The one place that knows how a run's events are written to the log and
 * read back: artifact ids, the `x-arbiter.*` metadata that marks tool calls,
 * files and sub-agent replies, and the text a model sees of a message. The
 * runner encodes with it; the native catalogue and the dialects decode with it.
 */
const META = ARBITER_ARTIFACT_META;

/** The run events that stream into the log as they happen (the rest end a turn). */
export type StreamedRunEvent = Extract<RunEvent, { type: 'text' | 'tool_call' | 'sub_agent_response' | 'usage' }>;
export type FileRunEvent = Extract<RunEvent, { type: 'file' }>;

export function upstreamMetadata(taskId: string, contextId: string): Record<string, string> {
  return { [UPSTREAM_TASK_ID]: taskId, [UPSTREAM_CONTEXT_ID]: contextId };
}

/**
 * A remote-backed agent's upstream event as it is logged (already mapped to this task by its follower), its
 * files' bytes stored with the task like a caller's or a tool's (the log holds references to them).
 */
export function upstreamEvent(ev: Extract<RunEvent, { type: 'upstream_status' | 'upstream_artifact' }>): {
  event: TaskEventBody;
  files: NewTaskFile[];
} {
  if (ev.type === 'upstream_status') {
    const { value: message, files } = upstreamFiles(ev.message);
    return {
      event: { kind: 'status', payload: { state: 'TASK_STATE_WORKING', message, timestamp: isoTime() } },
      files,
    };
  }
  const { value: artifact, files } = upstreamFiles(ev.artifact);
  return { event: { kind: 'artifact', payload: { artifact, append: ev.append, lastChunk: ev.lastChunk } }, files };
}

/** Upstream content with its file bytes stored (every file, however small), and no reference of the upstream's own. */
export function upstreamFiles<T extends { parts: PartJson[] }>(content: T): { value: T; files: NewTaskFile[] } {
  const { parts, files } = storeFileParts(content.parts, 0);
  return { value: parts === content.parts ? content : extend(content, { parts } as Partial<T>), files };
}

/** The id of a turn's `response` artifact (its text chunks append to it). */
export function responseArtifactId(taskId: string, turn: number): string {
  return `${taskId}-text-${turn}`;
}

/** How many turns already wrote a response: the next turn's number. */
export function turnsIn(taskId: string, artifacts: ArtifactJson[]): number {
  return artifacts.filter((a) => a.artifactId.startsWith(`${taskId}-text-`)).length;
}

/**
 * The text a model sees of a message: text as is, data as JSON, a small
 * text file (kept inline) as a header line and its text, a stored file as
 * one line with its name, media type and size (never its bytes), and a file
 * by URL as its address, which Arbiter never fetches by itself (a tool such
 * as `/fetch` may). The inbound surfaces validate parts before a message
 * reaches the engine.
 */
export function messageText(m: MessageJson): string {
  return m.parts
    .map((p) => {
      if (typeof p.text === 'string') return p.text;
      if (p.data !== undefined) return JSON.stringify(p.data);
      const ref = fileRefOf(p);
      if (ref) return describeStoredFile(p, ref);
      const name = `${p.filename || 'unnamed'} (${p.mediaType || 'unspecified'})`;
      if (typeof p.raw === 'string') return `[file ${name}]\n${Buffer.from(p.raw, 'base64').toString('utf8')}`;
      if (typeof p.url === 'string') {
        return `[file: ${p.filename || 'unnamed'}, ${p.mediaType || 'unspecified type'}, at ${p.url} (not fetched)]`;
      }
      return '';
    })
    .join('\n');
}

/** A user message from the log as the input of a run; `seq` is its place in the log. */
export function runInputOf(message: MessageJson, seq: number): RunInput & { seq: number } {
  return { text: messageText(message), messageId: message.messageId, message, seq };
}

/** A whole artifact in one event (a tool call, a file, a sub-agent's reply). */
function oneShot(
  artifactId: string,
  name: string,
  parts: PartJson[],
  metadata: Record<string, unknown>,
): TaskEventBody {
  return {
    kind: 'artifact',
    payload: { artifact: { artifactId, name, parts, metadata }, append: false, lastChunk: true },
  };
}

/**
 * Maps one run's events to log events, turn by turn: text chunks append to
 * the turn's `response` artifact, tool calls, files and sub-agent replies are
 * artifacts of their own, usage is cumulative over the task. Pure: the
 * runner writes what it returns.
 */
export class RunEventMapper {
  private chunks = 0;
  private extras = 0;
  /** Token counts of the task so far. */
  readonly tokens: { input: number; output: number };

  constructor(
    private readonly ctx: Pick<RunContext, 'taskId' | 'contextId'>,
    private turn: number,
    private readonly base: { input: number; output: number },
    /** The price of a model call made now (null: none configured). */
    private readonly priceOf: (provider: string, model: string) => CallPrice | null = () => null,
  ) {
    this.tokens = { ...base };
  }

  /** The log event for a streamed run event, or undefined when it writes nothing (an empty chunk). */
  map(ev: StreamedRunEvent): TaskEventBody | undefined {
    const { taskId } = this.ctx;
    switch (ev.type) {
      case 'text': {
        if (ev.delta.length === 0) return undefined;
        const delta = storable(ev.delta);
        if ((ev.depth ?? 0) > 0) {
          // A sub-agent's text: in the log (native streams show it live), not in the response artifact.
          return { kind: 'text', payload: { depth: ev.depth ?? 1, agent: ev.agent ?? '', delta } };
        }
        const append = this.chunks++ > 0;
        return {
          kind: 'artifact',
          payload: {
            artifact: { artifactId: responseArtifactId(taskId, this.turn), name: 'response', parts: [{ text: delta }] },
            append,
            lastChunk: false,
          },
        };
      }
      case 'tool_call':
        return oneShot(
          `${taskId}-tool-${this.turn}-${++this.extras}`,
          'tool_call',
          [{ data: { tool: ev.tool, ok: ev.ok, args: storable(ev.args), ...ev.detail } }],
          { [META.toolCall]: true, [META.depth]: ev.depth, [META.agent]: ev.agent },
        );
      case 'sub_agent_response':
        return oneShot(
          `${taskId}-sub-${this.turn}-${++this.extras}`,
          'sub_agent_response',
          [{ data: { agent: ev.agent, depth: ev.depth, content: storable(ev.content) } }],
          { [META.subAgent]: true },
        );
      case 'usage': {
        this.tokens.input = this.base.input + ev.inputTokens;
        this.tokens.output = this.base.output + ev.outputTokens;
        const payload = { inputTokens: this.tokens.input, outputTokens: this.tokens.output };
        // Not a spread of an empty object when there is no call (the usual in-process case).
        return ev.call
          ? { kind: 'usage', payload, calls: [accountedCall(ev.call, this.priceOf(ev.call.provider, ev.call.model))] }
          : { kind: 'usage', payload };
      }
      default: {
        const unreachable: never = ev;
        return unreachable;
      }
    }
  }

  /**
   * A file a tool wrote: an artifact of its own, named after the path, whose
   * part refers to the file stored with the task in the same write.
   */
  file(ev: FileRunEvent): { event: TaskEventBody; file: NewTaskFile } {
    const { file, part } = newFile(ev.bytes, ev.mediaType, ev.path);
    const event = oneShot(`${this.ctx.taskId}-file-${this.turn}-${++this.extras}`, ev.path, [part], {
      [META.file]: true,
      [META.depth]: ev.depth,
      [META.agent]: ev.agent,
    });
    return { event, file };
  }

  /** What closes the turn's response artifact (the last-chunk marker), if it has one. */
  closing(): TaskEventBody[] {
    if (this.chunks === 0) return [];
    const artifactId = responseArtifactId(this.ctx.taskId, this.turn);
    return [
      {
        kind: 'artifact',
        payload: { artifact: { artifactId, name: 'response', parts: [{ text: '' }] }, append: true, lastChunk: true },
      },
    ];
  }

  /** The agent's reply that ends this turn. */
  reply(content: string): MessageJson {
    return this.agentMessage(`${this.ctx.taskId}-r${this.turn}`, content);
  }

  /** The agent's question that interrupts the task. */
  question(prompt: string): MessageJson {
    return this.agentMessage(`${this.ctx.taskId}-q${this.turn}`, prompt);
  }

  /** The status message of a failed run. */
  failure(error: string): MessageJson {
    return this.agentMessage(`${this.ctx.taskId}-err`, error);
  }

  /** Moves on to the next turn of the same run (another message arrived). */
  nextTurn(): void {
    this.turn++;
    this.chunks = 0;
    this.extras = 0;
  }

  private agentMessage(messageId: string, text: string): MessageJson {
    return {
      messageId,
      role: 'ROLE_AGENT',
      parts: [{ text: storable(text) }],
      contextId: this.ctx.contextId,
      taskId: this.ctx.taskId,
    };
  }
}
