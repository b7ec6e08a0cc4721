import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import { statusTimestamp } from '../statements/fragments.sql.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import { allowedFrom, NON_TERMINAL_STATES, type TaskStateName } from '../task-state.js';
import type { Appended, Lease, NewTask, TaskRowChange } from './task-log.types.js';

/** An append made while its task's creation waited for its statement: written by that statement. */
export interface MergedAppend {
  events: TaskEventBody[];
  change: TaskRowChange;
  resolve: (appended: Appended | null) => void;
}

/** A creation waiting for its statement. */
export interface CreateItem {
  task: NewTask;
  first: TaskEventBody[];
  state: TaskStateName;
  lease: Lease;
  files: NewTaskFile[];
  /** Appends to the new task made before its statement was sent, in order. */
  tail: MergedAppend[];
  /** Set when its statement is built: later appends wait for it to commit, then follow it. */
  sent: boolean;
}

/** The row's fields an append can change. */
interface RowState {
  state: TaskStateName;
  history: MessageJson[];
  statusMessage: MessageJson | null;
  errorMessage: string | null;
  artifacts: ArtifactJson[] | null;
  tokens: { input: number; output: number } | null;
}

/** What a creation writes with the appends merged into it. */
export interface Folded extends RowState {
  events: TaskEventBody[];
  lease: Lease | null;
  files: NewTaskFile[];
  /**
   * Per merged append: where its events start in `events`, and the row after
   * it when it changed the state; null when its condition refused it.
   */
  parts: ({ from: number; row?: RowState } | null)[];
}

function messagesOf(events: TaskEventBody[]): MessageJson[] {
  const out: MessageJson[] = [];
  for (const e of events) if (e.kind === 'message') out.push(e.payload.message);
  return out;
}

/** The place (1-based) of the last message among a creation's first events: its newest input. */
export function lastInputOf(first: readonly TaskEventBody[]): number {
  for (let k = first.length - 1; k >= 0; k--) if (first[k].kind === 'message') return k + 1;
  return 0;
}

/**
 * A creation with the appends merged into it, applied in order as the
 * APPEND statement would apply them to the new row: each only from a state
 * it allows and only if the task has no newer input than it took; one that
 * is refused writes nothing.
 */
export function fold(item: CreateItem): Folded {
  const lastInput = lastInputOf(item.first);
  const f: Folded = {
    state: item.state,
    events: [...item.first],
    history: messagesOf(item.first),
    statusMessage: null,
    errorMessage: null,
    artifacts: null,
    tokens: null,
    lease: item.lease,
    files: [...item.files],
    parts: [],
  };
  for (const { events, change: c } of item.tail) {
    const allowed = c.state ? allowedFrom(c.state) : NON_TERMINAL_STATES;
    if (!allowed.includes(f.state) || (c.inputsUpTo !== undefined && lastInput > c.inputsUpTo)) {
      f.parts.push(null);
      continue;
    }
    const from = f.events.length;
    f.events.push(...events);
    if (c.state) f.state = c.state;
    if (c.statusMessage !== undefined) f.statusMessage = c.statusMessage;
    if (c.errorMessage !== undefined) f.errorMessage = c.errorMessage;
    if (c.historyAppend) f.history.push(...c.historyAppend);
    if (c.artifacts) f.artifacts = c.artifacts;
    if (c.tokens) f.tokens = c.tokens;
    if (c.lease !== undefined) f.lease = c.lease;
    if (c.files?.length) f.files.push(...c.files);
    if (c.metadata) item.task.metadata = { ...item.task.metadata, ...c.metadata };
    const { state, statusMessage, errorMessage, artifacts, tokens } = f;
    f.parts.push({
      from,
      ...(c.state ? { row: { state, statusMessage, errorMessage, artifacts, tokens, history: [...f.history] } } : {}),
    });
  }
  return f;
}

/**
 * What each merged append is answered once its creation committed (at `at`,
 * with `all` the events it wrote): its own events, and the row as the
 * statement left it after that append when it moved the state — what the
 * APPEND's RETURNING would have said; null for one that was refused.
 */
export function mergedAnswers(
  task: NewTask,
  tail: MergedAppend[],
  f: Folded,
  all: StoredTaskEvent[],
  at: Date,
): (Appended | null)[] {
  return tail.map((m, k) => {
    const part = f.parts[k];
    if (!part) return null;
    const events = all.slice(part.from, part.from + m.events.length);
    if (!part.row) return { events };
    const upto = part.row;
    return {
      events,
      row: {
        taskId: task.taskId,
        tenantId: task.tenantId,
        agentId: task.agentId,
        contextId: task.contextId,
        state: upto.state,
        createdAt: at,
        updatedAt: new Date(statusTimestamp(all.slice(0, part.from + m.events.length)) ?? at),
        statusMessage: upto.statusMessage,
        errorMessage: upto.errorMessage ?? '',
        history: upto.history,
        artifacts: upto.artifacts ?? [],
        metadata: task.metadata,
        inputTokens: upto.tokens?.input ?? 0,
        outputTokens: upto.tokens?.output ?? 0,
        lastSeq: part.from + m.events.length,
      },
    };
  });
}
