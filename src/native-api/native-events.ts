import { ARBITER_ARTIFACT_META, type ArtifactJson, type PartJson } from '../common/a2a-json.js';
import type { StoredTaskEvent } from '../tasks/task-events.js';
import type { TaskStateName } from '../tasks/task-state.js';

/**
 * Arbiter's native event catalogue, a projection of the task event log
 * (the A2A dialects are the other projections):
 *
 *   request_received   the message that started (or continued) the request
 *   stream_start       the agent started (depth 0)
 *   text               a chunk of an agent's visible reply (depth 0, or a sub-agent's depth ≥ 1)
 *   tool_call          a slash command ran: tool, ok
 *   file               a file written with /write
 *   sub_agent_response a delegated agent's whole reply
 *   token_usage        tokens so far
 *   input_required     the agent asks for more input
 *   error              the run failed: error_code, message
 *   stream_end         the agent stopped (depth 0)
 *   done               the end: ok, content, tokens, error_code on failure
 *
 * Every frame carries the `seq` of the log event it comes from as its SSE
 * `id` (and in its data, with `created_at`, when that event was stored);
 * one event can yield several frames (a terminal status yields `stream_end`
 * and `done`), which then share the id and the time.
 */
export interface NativeFrame {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

export interface NativeTaskInfo {
  id: string;
  agentId: string;
  contextId: string;
}

/** `code: message` error text → its stable code; other texts are turned into one. */
export function errorCode(error: string, state: TaskStateName): { code: string; message: string } {
  if (state === 'TASK_STATE_CANCELED') return { code: 'cancelled', message: error || 'canceled' };
  const m = /^([a-z][a-z_]{1,40}): ([\s\S]*)$/.exec(error);
  if (m?.[1] && m[2] !== undefined) return { code: m[1], message: m[2] };
  const slug = error
    .toLowerCase()
    .replace(/[^a-z]+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 40);
  return { code: slug || 'failed', message: error || 'failed' };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A file's `content`: its text when it is UTF-8 without NUL, else base64 (`encoding` says which). */
function fileContent(bytes: Buffer): { content: string; encoding: 'utf8' | 'base64' } {
  if (!bytes.includes(0)) {
    try {
      return { content: utf8.decode(bytes), encoding: 'utf8' };
    } catch {
      // not text: base64 below
    }
  }
  return { content: bytes.toString('base64'), encoding: 'base64' };
}

const textOf = (parts: PartJson[] | undefined): string => (parts ?? []).map((p) => p.text ?? '').join('');

/** The frames one log event yields. `tokens` are the task's final counts, for `done`. */
export function nativeFrames(
  e: StoredTaskEvent,
  task: NativeTaskInfo,
  tokens?: { input: number; output: number },
): NativeFrame[] {
  // `created_at`: when the log event was committed, so a client can show times and durations (replayed or live).
  const at = { id: e.seq, base: { seq: e.seq, request_id: task.id, created_at: e.createdAt } };
  const f = (event: string, data: Record<string, unknown>): NativeFrame => ({
    id: at.id,
    event,
    data: { ...at.base, ...data },
  });
  switch (e.kind) {
    case 'message':
      return [
        f('request_received', {
          agent: task.agentId,
          context_id: task.contextId,
          message: textOf(e.payload.message.parts),
          // A task's creation writes submitted (1), its message (2), working (3); later messages continue it.
          ...(e.seq > 2 ? { continuation: true } : {}),
        }),
      ];
    case 'text':
      return [f('text', { depth: e.payload.depth, agent: e.payload.agent, content: e.payload.delta })];
    case 'usage':
      return [f('token_usage', { input_tokens: e.payload.inputTokens, output_tokens: e.payload.outputTokens })];
    case 'artifact': {
      const a = e.payload.artifact;
      const d = decodeArtifact(task.id, task.agentId, a);
      switch (d.kind) {
        case 'tool_call':
          return [
            f('tool_call', { tool: d.tool, ok: d.ok, args: d.args, depth: d.depth, agent: d.agent, ...d.detail }),
          ];
        case 'sub_agent':
          return [f('sub_agent_response', { agent: d.agent, depth: d.depth, content: d.content })];
        case 'file':
          return [
            f('file', {
              path: d.path,
              media_type: d.mediaType,
              size: d.bytes.length,
              ...fileContent(d.bytes),
              depth: d.depth,
              agent: d.agent,
            }),
          ];
        case 'response':
          return d.text ? [f('text', { depth: 0, agent: task.agentId, content: d.text })] : [];
        case 'other':
          return [f('artifact', { artifact: a, append: e.payload.append, last_chunk: e.payload.lastChunk })];
        default: {
          const unreachable: never = d;
          return unreachable;
        }
      }
    }
    case 'status': {
      const p = e.payload;
      switch (p.state) {
        case 'TASK_STATE_SUBMITTED':
          return [];
        case 'TASK_STATE_WORKING':
          return [f('stream_start', { depth: 0, agent: task.agentId })];
        case 'TASK_STATE_INPUT_REQUIRED':
        case 'TASK_STATE_AUTH_REQUIRED':
          return [f('input_required', { content: textOf(p.message?.parts) })];
        case 'TASK_STATE_COMPLETED':
        case 'TASK_STATE_FAILED':
        case 'TASK_STATE_CANCELED':
        case 'TASK_STATE_REJECTED':
          break;
      }
      const counts = tokens ? { input_tokens: tokens.input, output_tokens: tokens.output } : {};
      const end = f('stream_end', { depth: 0, agent: task.agentId });
      if (p.state === 'TASK_STATE_COMPLETED') {
        return [end, f('done', { ok: true, content: textOf(p.message?.parts), ...counts })];
      }
      const { code, message } = errorCode(p.error ?? '', p.state);
      const done = f('done', { ok: false, content: '', error_code: code, error: message, ...counts });
      return p.state === 'TASK_STATE_CANCELED' ? [end, done] : [f('error', { error_code: code, message }), end, done];
    }
    default: {
      const unreachable: never = e;
      return unreachable;
    }
  }
}

const META = ARBITER_ARTIFACT_META;

/** An artifact from the log, by what the run wrote it for (the run-event mapper's metadata, read back). */
export type DecodedArtifact =
  | { kind: 'response'; text: string }
  | {
      kind: 'tool_call';
      tool: unknown;
      ok: unknown;
      args: unknown;
      detail: Record<string, unknown>;
      depth: number;
      agent: string;
    }
  | { kind: 'file'; path: string; mediaType: string; bytes: Buffer; depth: number; agent: string }
  | { kind: 'sub_agent'; agent: unknown; depth: unknown; content: unknown }
  | { kind: 'other' };

/** Reads back what `RunEventMapper` wrote; `agentId` is the task's agent (the default for `agent`). */
export function decodeArtifact(taskId: string, agentId: string, a: ArtifactJson): DecodedArtifact {
  const meta = a.metadata ?? {};
  const rawDepth = meta[META.depth];
  const rawAgent = meta[META.agent];
  const depth = typeof rawDepth === 'number' ? rawDepth : 0;
  const agent = typeof rawAgent === 'string' ? rawAgent : agentId;
  const first = a.parts[0];
  const data =
    first?.data !== null && typeof first?.data === 'object' ? (first.data as Record<string, unknown>) : undefined;
  if (meta[META.toolCall] === true && data) {
    const { tool, ok, args, ...detail } = data;
    return { kind: 'tool_call', tool, ok, args: args ?? '', detail, depth, agent };
  }
  if (meta[META.subAgent] === true && data) {
    return { kind: 'sub_agent', agent: data.agent, depth: data.depth, content: data.content };
  }
  if (meta[META.file] === true) {
    return {
      kind: 'file',
      path: first?.filename ?? a.name ?? '',
      mediaType: first?.mediaType ?? 'text/plain',
      bytes: Buffer.from(first?.raw ?? '', 'base64'),
      depth,
      agent,
    };
  }
  if (a.artifactId.startsWith(`${taskId}-text-`)) {
    return { kind: 'response', text: a.parts.map((p) => p.text ?? '').join('') };
  }
  return { kind: 'other' };
}
