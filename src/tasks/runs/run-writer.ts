import { extend } from '../../common/extend.js';
import type { EventLog } from '../event-log/event-log.service.js';
import type { Appended, TaskRowChange } from '../repositories/task-log.types.js';
import type { ArtifactJson } from '../../common/a2a-json.js';
import type { TaskEventBody } from '../task-events.js';
import { asError } from '../../common/errors.js';

/** What queued events may change on the task row: later status messages win, metadata merges, files add up. */
export type QueuedChange = Pick<TaskRowChange, 'statusMessage' | 'metadata' | 'files'>;

/** How many events may wait for a write before the run waits for it (an upstream faster than the database). */
export const MAX_QUEUED_EVENTS = 64;

/**
 * Why a run was stopped when a write of its queued events failed (the
 * database was away, or refused the statement): its `cause` is the error.
 * Those events are lost, so the run cannot complete; it ends failed.
 */
export class RunWriteFailed extends Error {
  constructor(cause: unknown) {
    super('the run’s events could not be stored', { cause });
    this.name = 'RunWriteFailed';
  }
}

/** No queued events (shared: never written to). */
const NOTHING: readonly TaskEventBody[] = [];

/**
 * Writes one run's events in order. Text chunks are queued and written by a
 * background loop; chunks that pile up while a write is in flight go out
 * together in the next statement (merged where they extend the same
 * artifact), so a fast model costs one write per batch, not per token, and a
 * slow one still reaches subscribers chunk by chunk.
 *
 * A queued write that fails loses its events: the run must not then
 * complete as if its log held its whole answer. The writer aborts the run
 * (`stop`, with `RunWriteFailed`), takes nothing more into its queue, and from then on writes
 * only an end that fails or cancels the task; any other write throws the
 * failure.
 */
export class RunWriter {
  private pending: TaskEventBody[] = [];
  /** The row change the queued events make, written in their statement. */
  private change: QueuedChange = {};
  private loop: Promise<void> | undefined;
  /** Set while the background loop runs (`loop` is its promise once it has waited for something). */
  private running = false;
  /** The background loop that is waiting for its macrotask and has written nothing yet (0: none). */
  private deferred = 0;
  private loops = 0;
  private failure: Error | undefined;
  /** Set once a queued write was refused: the task ended without us (canceled …). */
  rejected = false;

  /** `owner`: every write is conditional on the task being leased to it (see `TaskRowChange.owner`). */
  constructor(
    private readonly taskId: string,
    private readonly log: EventLog,
    private readonly owner?: string,
    /** The run's abort: aborted with `RunWriteFailed` when a queued write fails (see the class). */
    private readonly stop?: Pick<AbortController, 'abort'>,
  ) {}

  /** Queues an event that changes nothing on the task row (text chunks, usage). */
  enqueue(event: TaskEventBody): void {
    if (this.failure || this.rejected) return;
    this.pending.push(event);
    this.schedule();
  }

  /**
   * Queues events and the change they make to the row (an upstream's status message, metadata, files), written
   * together with whatever else is queued. Await `room()` before queuing more when the queue is long.
   */
  queue(events: TaskEventBody[], change: QueuedChange = {}): void {
    if (this.failure || this.rejected) return;
    this.pending.push(...events);
    this.change = mergeChange(this.change, change);
    this.schedule();
  }

  /** Starts a write of what is queued on the next macrotask, unless a write is on its way. */
  private schedule(): void {
    if (this.loop || this.deferred || this.running) return;
    // Written on the next macrotask, so that chunks a fast model yields in the meantime go out in one statement;
    // a final write (or a flush) that comes first takes the queue over and nothing is written twice.
    const id = ++this.loops;
    this.deferred = id;
    setImmediate(() => {
      if (this.deferred === id) this.startLoop(); // else taken over
    });
  }

  /** Starts the background loop on what is queued now. */
  private startLoop(): void {
    this.deferred = 0;
    const loop = this.run();
    // With nothing to write the loop has ended already (and cleared `loop`): nothing to wait for.
    if (this.running) this.loop = loop;
  }

  /**
   * Writes queued events, then `events` with `change`, all in order. Null when
   * the append was refused (the task ended, or `change.inputsUpTo` is stale).
   * After a failed queued write, throws that failure unless `change` fails or
   * cancels the task (the run's end, with the artifacts it folded in memory).
   */
  write(events: TaskEventBody[], change: TaskRowChange = {}): Promise<Appended | null> {
    if (this.deferred) {
      // The loop has not started yet: this write takes its queue over, now rather than a macrotask later.
      this.deferred = 0;
      return this.writeNow(events, change);
    }
    // Nothing in flight (a run's last write, mostly): no wait, and no frame of an async function to wait in.
    if (!this.loop) return this.writeNow(events, change);
    return this.flush().then(() => this.writeNow(events, change));
  }

  /** `write` once nothing queued before it is in flight; a failure is a rejection, as from an async function. */
  private writeNow(events: TaskEventBody[], change: TaskRowChange): Promise<Appended | null> {
    try {
      return this.append(events, change);
    } catch (err) {
      return Promise.reject(asError(err));
    }
  }

  private append(events: TaskEventBody[], change: TaskRowChange): Promise<Appended | null> {
    if (this.rejected) return Promise.resolve(null);
    if (this.failure !== undefined && change.state !== 'TASK_STATE_FAILED' && change.state !== 'TASK_STATE_CANCELED') {
      return Promise.reject(this.failure);
    }
    // Whatever is still queued rides along in the same statement (a turn's last chunk and its closing as one event).
    // (Nothing is queued after a failed write: its events were dropped, and no more are taken.)
    const queued = this.pending.length === 0 ? NOTHING : this.pending.splice(0);
    const queuedChange = this.change;
    this.change = {};
    return this.log
      .append(
        this.taskId,
        mergeChunks(queued.length ? [...queued, ...events] : events),
        this.owned(mergeChange(queuedChange, change)),
      )
      .then((stored) => {
        if (!stored) {
          // Refused: the queued events go with the next write (or nowhere, if the task ended).
          this.pending.unshift(...queued);
          this.change = mergeChange(queuedChange, this.change);
        }
        return stored;
      });
  }

  /** Resolves once fewer than `MAX_QUEUED_EVENTS` events wait (at once when they do already). */
  async room(): Promise<void> {
    if (this.pending.length >= MAX_QUEUED_EVENTS) await this.flush();
  }

  private owned(change: TaskRowChange): TaskRowChange {
    return this.owner ? { ...change, owner: this.owner } : change;
  }

  /** Waits for queued events to be written (or dropped after a write error). */
  async flush(): Promise<void> {
    for (;;) {
      // Queued, its write not started yet (also queued while the last write finished): start it now.
      if (this.deferred) this.startLoop();
      if (!this.loop) return;
      await this.loop;
    }
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while ((this.pending.length > 0 || hasChange(this.change)) && !this.rejected) {
        const batch = mergeChunks(this.pending.splice(0));
        const change = this.change;
        this.change = {};
        const stored = await this.log.append(this.taskId, batch, this.owned(change));
        if (!stored) {
          this.rejected = true;
          this.pending = [];
          break;
        }
      }
    } catch (err) {
      this.failure = asError(err);
      this.pending = [];
      this.change = {};
      this.stop?.abort(new RunWriteFailed(this.failure));
    } finally {
      this.running = false;
      this.loop = undefined;
    }
  }
}

function hasChange(c: QueuedChange): boolean {
  return c.statusMessage !== undefined || c.metadata !== undefined || (c.files?.length ?? 0) > 0;
}

/** `later` applied after `earlier`: its status message (if it sets one) wins, metadata merges, files add up. */
export function mergeChange<C extends QueuedChange>(earlier: QueuedChange, later: C): C & QueuedChange {
  if (!hasChange(earlier)) return later;
  const out: C = { ...later };
  if (later.statusMessage === undefined && earlier.statusMessage !== undefined) {
    out.statusMessage = earlier.statusMessage;
  }
  if (earlier.metadata) out.metadata = { ...earlier.metadata, ...later.metadata };
  if (earlier.files?.length) out.files = [...earlier.files, ...(later.files ?? [])];
  return out;
}

/**
 * Merges consecutive appends of text to the same artifact into one event, and an artifact's closing (an empty
 * append marked `lastChunk`) into the chunk before it (or before the token counts that followed it): the chunk
 * becomes the artifact's last.
 */
export function mergeChunks(events: TaskEventBody[]): TaskEventBody[] {
  const out: TaskEventBody[] = [];
  // The texts of the chunks merged into the last event so far, joined once the run of them ends (one new event
  // for the run, not one per chunk).
  let texts: string[] | undefined;
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
      (texts ??= [prev.payload.artifact.parts[0].text]).push(e.payload.artifact.parts[0].text);
      continue;
    }
    if (texts) {
      joinTexts(out, texts);
      texts = undefined;
    }
    if (e.kind === 'artifact' && e.payload.append && e.payload.lastChunk) {
      // The chunk it closes may be followed by the turn's token counts (no surface shows them between the two).
      let i = out.length - 1;
      while (out[i]?.kind === 'usage') i--;
      const chunk = out[i];
      if (
        chunk?.kind === 'artifact' &&
        !chunk.payload.lastChunk &&
        isBareClosing(e.payload.artifact, chunk.payload.artifact)
      ) {
        out[i] = { kind: 'artifact', payload: extend(chunk.payload, { lastChunk: true }) };
        continue;
      }
    }
    if (
      prev?.kind === 'text' &&
      e.kind === 'text' &&
      prev.payload.depth === e.payload.depth &&
      prev.payload.agent === e.payload.agent
    ) {
      out[out.length - 1] = {
        kind: 'text',
        payload: extend(prev.payload, { delta: prev.payload.delta + e.payload.delta }),
      };
      continue;
    }
    if (prev?.kind === 'usage' && e.kind === 'usage') {
      // The later counts stand (they are cumulative); every call either reports is accounted.
      const calls = prev.calls?.length ? [...prev.calls, ...(e.calls ?? [])] : e.calls;
      out[out.length - 1] = calls?.length ? { kind: 'usage', payload: e.payload, calls } : e;
      continue;
    }
    out.push(e);
  }
  if (texts) joinTexts(out, texts);
  return out;
}

/** The texts merged into the last event of `out` joined into it (a function: no closure per `mergeChunks`). */
function joinTexts(out: TaskEventBody[], texts: string[]): void {
  const last = out[out.length - 1];
  if (last?.kind !== 'artifact') return;
  const artifact = extend(last.payload.artifact, { parts: [{ text: texts.join('') }] });
  out[out.length - 1] = { kind: 'artifact', payload: extend(last.payload, { artifact }) };
}

/** An artifact event that only closes `prev`'s artifact: its id and name, one empty text part, nothing else. */
function isBareClosing(a: ArtifactJson, prev: ArtifactJson): boolean {
  const part = a.parts.length === 1 ? a.parts[0] : undefined;
  return (
    a.artifactId === prev.artifactId &&
    a.name === prev.name &&
    Object.keys(a).every((k) => k === 'artifactId' || k === 'name' || k === 'parts') &&
    part?.text === '' &&
    Object.keys(part).length === 1
  );
}
