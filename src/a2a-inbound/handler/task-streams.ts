import { Injectable } from '@nestjs/common';
import { EventLog, type Watch } from '../../tasks/event-log/event-log.service.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { isTerminal } from '../../tasks/task-state.js';
import type { StreamItem, TaskView } from '../../a2a-wire/dialects/dialect.js';
import { trimHistory } from '../../a2a-wire/dialects/dialect.js';
import type { CallContext } from './call-context.js';

/**
 * What a client reads of its tasks (spec §3.1.2, §3.1.3, §3.1.6): a task as
 * its view shows it, with stored files' bytes back in their parts, and a
 * task's stream — the task, then its events from the log, live, on any
 * replica.
 */
@Injectable()
export class TaskStreams {
  constructor(
    private readonly log: EventLog,
    private readonly files: TaskFiles,
  ) {}

  /** The task as a client reads it: what the view shows, with stored files' bytes back in their parts. */
  withFiles(ctx: CallContext, task: TaskSnapshot, view: TaskView): TaskSnapshot | Promise<TaskSnapshot> {
    return this.files.task(ctx.principal.tenantId, trimmed(task, view));
  }

  /**
   * The task, then its events until `stopAt`. `watch`: the new task's events
   * were subscribed to before its run started (no backlog to read).
   */
  async *follow(
    ctx: CallContext,
    first: TaskSnapshot,
    stopAt: (state: string) => boolean,
    afterSeq: number,
    view: { historyLength?: number },
    watch?: Watch,
  ): AsyncGenerator<StreamItem> {
    try {
      yield { type: 'task', task: await this.withFiles(ctx, first, view), view };
      // Already there: terminal, or settled after this message (a continuation that ran fast).
      if (isTerminal(first.state) || (stopAt(first.state) && (afterSeq === 0 || first.lastSeq > afterSeq))) return;
      for await (const event of this.log.tail(ctx.principal.tenantId, first.id, first.lastSeq, ctx.signal, watch)) {
        // A continuation's stream ends at a settled state written after its message, not at the one it continued.
        const final = event.kind === 'status' && event.seq > afterSeq && stopAt(event.payload.state);
        const withBytes = this.files.event(ctx.principal.tenantId, event);
        yield { type: 'event', event: withBytes instanceof Promise ? await withBytes : withBytes, final };
        if (final) return;
      }
    } finally {
      watch?.close();
    }
  }

  /** v0.3's `tasks/resubscribe`: the whole log from the start, until the task is terminal. */
  async *replay(ctx: CallContext, taskId: string): AsyncGenerator<StreamItem> {
    for await (const event of this.log.tail(ctx.principal.tenantId, taskId, 0, ctx.signal)) {
      const final = event.kind === 'status' && isTerminal(event.payload.state);
      yield { type: 'event', event: await this.files.event(ctx.principal.tenantId, event), final };
    }
  }
}

/**
 * Only what a view shows (history trimmed per §3.2.4, artifacts only when
 * asked for), so that no file is read for a part the client does not get.
 */
export function trimmed(t: TaskSnapshot, view: TaskView): TaskSnapshot {
  const history = trimHistory(t.history, view.historyLength) ?? [];
  const artifacts = view.includeArtifacts === false ? [] : t.artifacts;
  return history === t.history && artifacts === t.artifacts ? t : { ...t, history, artifacts };
}

/** A terminal task's stream on v0.3's resubscribe: its final status only. */
export async function* finalStatusOnly(task: TaskSnapshot): AsyncGenerator<StreamItem> {
  await Promise.resolve();
  yield {
    type: 'event',
    final: true,
    event: {
      taskId: task.id,
      seq: task.lastSeq,
      createdAt: task.timestamp,
      kind: 'status',
      payload: {
        state: task.state,
        ...(task.statusMessage ? { message: task.statusMessage } : {}),
        ...(task.errorMessage ? { error: task.errorMessage } : {}),
        timestamp: task.timestamp,
      },
    },
  };
}
