import { Injectable } from '@nestjs/common';
import type { PartJson } from '../common/a2a-json.js';
import { TaskFileRepository } from './repositories/task-file.repository.js';
import type { StoredTaskEvent } from './task-events.js';
import { artifactWithBytes, fileBytesIn, fileIdsIn, messagesWithBytes, messageWithBytes } from './task-files.js';
import type { TaskSnapshot } from './task-snapshot.js';
import type { TaskListCursor } from './repositories/task-reads.repository.js';

const NO_PARTS: readonly PartJson[] = [];

/** Every part of a task's messages, artifacts and status message (a list: a generator costs more per part). */
function snapshotParts(t: TaskSnapshot): PartJson[] {
  const out: PartJson[] = [];
  for (const m of t.history) for (const p of m.parts) out.push(p);
  for (const a of t.artifacts) for (const p of a.parts) out.push(p);
  if (t.statusMessage) for (const p of t.statusMessage.parts) out.push(p);
  return out;
}

function eventParts(e: StoredTaskEvent): readonly PartJson[] {
  if (e.kind === 'artifact') return e.payload.artifact.parts;
  if (e.kind === 'message') return e.payload.message.parts;
  if (e.kind === 'status' && e.payload.message) return e.payload.message.parts;
  return NO_PARTS;
}

/**
 * Puts stored files' bytes back into what a client reads: tasks and log
 * events as the surfaces (A2A bindings, webhooks, the native API) render
 * them. Nothing is read when no part refers to a stored file.
 */
@Injectable()
export class TaskFiles {
  constructor(private readonly files: TaskFileRepository) {}

  /** The task with its stored files' bytes; the task itself, at once (no promise), when it refers to none. */
  task(tenantId: string, t: TaskSnapshot): TaskSnapshot | Promise<TaskSnapshot> {
    const ids = fileIdsIn(snapshotParts(t));
    return ids.length === 0 ? t : this.withBytes(tenantId, [t], ids).then((ts) => ts[0] ?? t);
  }

  /**
   * The longest head of `ts` whose stored files come to at most `budget`
   * bytes — at least one task, however large — so that a page of tasks
   * cannot pull every file of a hundred tasks into memory at once.
   */
  withinBudget(ts: TaskSnapshot[], budget: number): TaskSnapshot[] {
    let used = 0;
    for (let i = 0; i < ts.length; i++) {
      used += fileBytesIn(snapshotParts(ts[i]));
      if (used > budget && i > 0) return ts.slice(0, i);
    }
    return ts;
  }

  /**
   * A page of a task list as it is served: cut to `budget` bytes of stored
   * files too (see `withinBudget`), their bytes restored, and the keyset the
   * next page starts after — none when nothing follows.
   */
  async page(
    tenantId: string,
    listed: { tasks: TaskSnapshot[]; more: boolean; last?: TaskListCursor },
    budget: number,
  ): Promise<{ tasks: TaskSnapshot[]; next?: TaskListCursor }> {
    const page = this.withinBudget(listed.tasks, budget);
    const cut = page.length < listed.tasks.length ? page[page.length - 1] : undefined;
    const next = cut ? { updatedAt: cut.timestamp, taskId: cut.id } : listed.more ? listed.last : undefined;
    return { tasks: await this.tasks(tenantId, page), ...(next ? { next } : {}) };
  }

  /** Tasks of one tenant, with one read for all their files. */
  async tasks(tenantId: string, ts: TaskSnapshot[]): Promise<TaskSnapshot[]> {
    const ids = ts.flatMap((t) => fileIdsIn(snapshotParts(t)));
    return ids.length === 0 ? ts : this.withBytes(tenantId, ts, ids);
  }

  private async withBytes(tenantId: string, ts: TaskSnapshot[], ids: string[]): Promise<TaskSnapshot[]> {
    const bytes = await this.files.bytes(tenantId, ids);
    return ts.map((t) => ({
      ...t,
      history: messagesWithBytes(t.history, bytes),
      artifacts: t.artifacts.map((a) => artifactWithBytes(a, bytes)),
      statusMessage: t.statusMessage ? messageWithBytes(t.statusMessage, bytes) : null,
    }));
  }

  /** The event with its stored files' bytes; the event itself, at once (no promise), when it refers to none. */
  event(tenantId: string, e: StoredTaskEvent): StoredTaskEvent | Promise<StoredTaskEvent> {
    const ids = fileIdsIn(eventParts(e));
    return ids.length === 0 ? e : this.eventWithBytes(tenantId, e, ids);
  }

  private async eventWithBytes(tenantId: string, e: StoredTaskEvent, ids: string[]): Promise<StoredTaskEvent> {
    const bytes = await this.files.bytes(tenantId, ids);
    switch (e.kind) {
      case 'artifact':
        return { ...e, payload: { ...e.payload, artifact: artifactWithBytes(e.payload.artifact, bytes) } };
      case 'message':
        return { ...e, payload: { message: messageWithBytes(e.payload.message, bytes) } };
      case 'status':
        return e.payload.message
          ? { ...e, payload: { ...e.payload, message: messageWithBytes(e.payload.message, bytes) } }
          : e;
      case 'text':
      case 'usage':
        return e;
      default: {
        const unreachable: never = e;
        return unreachable;
      }
    }
  }

  /** How many files a task has stored. */
  count(tenantId: string, taskId: string): Promise<number> {
    return this.files.count(tenantId, taskId);
  }
}
