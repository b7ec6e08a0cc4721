import type { EventLog } from '../event-log/event-log.service.js';
import type { Appended, TaskRowChange } from '../repositories/task-log.types.js';
import type { TaskEventBody } from '../task-events.js';

/**
 * Writes one run's events in order. Text chunks are queued and written by a
 * background loop; chunks that pile up while a write is in flight go out
 * together in the next statement (merged where they extend the same
 * artifact), so a fast model costs one write per batch, not per token, and a
 * slow one still reaches subscribers chunk by chunk.
 */
export class RunWriter {
  private pending: TaskEventBody[] = [];
  private loop: Promise<void> | undefined;
  /** The background loop that is waiting for its macrotask and has written nothing yet (0: none). */
  private deferred = 0;
  private loops = 0;
  private failure: unknown;
  /** Set once a queued write was refused: the task ended without us (canceled …). */
  rejected = false;

  /** `owner`: every write is conditional on the task being leased to it (see `TaskRowChange.owner`). */
  constructor(
    private readonly taskId: string,
    private readonly log: EventLog,
    private readonly owner?: string,
  ) {}

  /** Queues an event that changes nothing on the task row (text chunks, usage). */
  enqueue(event: TaskEventBody): void {
    if (this.failure || this.rejected) return;
    this.pending.push(event);
    if (this.loop) return;
    const id = ++this.loops;
    this.deferred = id;
    this.loop = this.deferredRun(id);
  }

  /**
   * Writes queued events, then `events` with `change`, all in order. Null when
   * the append was refused (the task ended, or `change.inputsUpTo` is stale).
   */
  async write(events: TaskEventBody[], change: TaskRowChange = {}): Promise<Appended | null> {
    // If queued chunks could not be written, the final write still records the
    // outcome (and the folded artifacts on the row carry the full text).
    if (this.deferred) {
      // The loop has not written anything yet: this write takes its queue over, now rather than a macrotask later.
      this.deferred = 0;
      this.loop = undefined;
    } else await this.flush();
    if (this.rejected) return null;
    // Whatever is still queued rides along in the same statement.
    const queued = this.failure ? [] : mergeChunks(this.pending.splice(0));
    const stored = await this.log.append(this.taskId, [...queued, ...events], this.owned(change));
    // Refused: the queued chunks go with the next write (or nowhere, if the task ended).
    if (!stored) this.pending.unshift(...queued);
    return stored;
  }

  /** Waits for queued events to be written (or dropped after a write error). */
  private owned(change: TaskRowChange): TaskRowChange {
    return this.owner ? { ...change, owner: this.owner } : change;
  }

  async flush(): Promise<void> {
    while (this.loop) await this.loop;
  }

  /**
   * Starts writing on the next macrotask, so chunks a fast model yields in
   * the meantime go out in one statement; if a final write comes first it
   * takes the queue over and nothing is written twice.
   */
  private async deferredRun(id: number): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.deferred !== id) return; // taken over
    this.deferred = 0;
    await this.run();
  }

  private async run(): Promise<void> {
    try {
      while (this.pending.length > 0 && !this.rejected) {
        const batch = mergeChunks(this.pending.splice(0));
        const stored = await this.log.append(this.taskId, batch, this.owned({}));
        if (!stored) {
          this.rejected = true;
          this.pending = [];
          break;
        }
      }
    } catch (err) {
      this.failure = err;
      this.pending = [];
    } finally {
      this.loop = undefined;
    }
  }
}

/** Merges consecutive appends of text to the same artifact into one event. */
export function mergeChunks(events: TaskEventBody[]): TaskEventBody[] {
  const out: TaskEventBody[] = [];
  for (const e of events) {
    const prev = out[out.length - 1];
    if (
      prev?.kind === 'artifact' &&
      e.kind === 'artifact' &&
      e.payload.append &&
      !prev.payload.lastChunk &&
      !e.payload.lastChunk &&
      prev.payload.artifact.artifactId === e.payload.artifact.artifactId &&
      prev.payload.artifact.parts.length === 1 &&
      e.payload.artifact.parts.length === 1 &&
      typeof prev.payload.artifact.parts[0]?.text === 'string' &&
      typeof e.payload.artifact.parts[0]?.text === 'string'
    ) {
      const text = prev.payload.artifact.parts[0].text + e.payload.artifact.parts[0].text;
      out[out.length - 1] = {
        kind: 'artifact',
        payload: { ...prev.payload, artifact: { ...prev.payload.artifact, parts: [{ text }] } },
      };
      continue;
    }
    if (
      prev?.kind === 'text' &&
      e.kind === 'text' &&
      prev.payload.depth === e.payload.depth &&
      prev.payload.agent === e.payload.agent
    ) {
      out[out.length - 1] = { kind: 'text', payload: { ...prev.payload, delta: prev.payload.delta + e.payload.delta } };
      continue;
    }
    if (prev?.kind === 'usage' && e.kind === 'usage') {
      // The later counts stand (they are cumulative); every call either reports is accounted.
      const calls = [...(prev.calls ?? []), ...(e.calls ?? [])];
      out[out.length - 1] = calls.length ? { kind: 'usage', payload: e.payload, calls } : e;
      continue;
    }
    out.push(e);
  }
  return out;
}
