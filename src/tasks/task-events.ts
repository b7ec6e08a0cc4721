import { extend } from '../common/extend.js';
import type { ArtifactJson, MessageJson, PartJson } from '../common/a2a-json.js';
import { fileRefOf } from './task-files.js';
import type { AccountedCall } from '../usage/usage-call.js';
import type { TaskStateName } from './task-state.js';

/**
 * The event log's vocabulary. Every run (A2A or native) writes these; each
 * wire dialect is a projection of them.
 */
export type TaskEventBody =
  /** A state change, with the status message and the error text of a failure. */
  | { kind: 'status'; payload: { state: TaskStateName; message?: MessageJson; error?: string; timestamp: string } }
  /** A user message added to the task (the first one, or a continuation). */
  | { kind: 'message'; payload: { message: MessageJson } }
  /** Artifact content; text deltas are `append` chunks of the turn's response artifact. */
  | { kind: 'artifact'; payload: { artifact: ArtifactJson; append: boolean; lastChunk: boolean } }
  /** A delegated sub-agent's text as it streams (native streams only; A2A gets its whole reply as an artifact). */
  | { kind: 'text'; payload: { depth: number; agent: string; delta: string } }
  /**
   * Token counts of the task so far. `calls`, the model calls it reports, is
   * not part of the event: the statement that writes the event writes them
   * to the usage ledger (and its rollups) in the same transaction.
   */
  | { kind: 'usage'; payload: { inputTokens: number; outputTokens: number }; calls?: AccountedCall[] };

export type TaskEventKind = TaskEventBody['kind'];

export type StoredTaskEvent = TaskEventBody & { taskId: string; seq: number; createdAt: string };

/** An event as committed: one object shape for every kind (no spread, which costs more and varies it). */
export function stored(e: TaskEventBody, taskId: string, seq: number, createdAt: string): StoredTaskEvent {
  return { kind: e.kind, payload: e.payload, taskId, seq, createdAt } as StoredTaskEvent;
}

/** Folds artifact events into artifacts, in first-seen order (spec §4.2.2 append semantics). */
export function foldArtifacts(base: ArtifactJson[], events: Iterable<TaskEventBody>): ArtifactJson[] {
  const fold = new ArtifactFold(base);
  for (const e of events) fold.add(e);
  return fold.release();
}

/**
 * The content of parts, in characters: text, file bytes (as base64, inline or stored apart and referred to) and
 * links, data as JSON.
 */
export function partsSize(parts: readonly PartJson[]): number {
  let n = 0;
  for (const p of parts) {
    n += (p.text?.length ?? 0) + (p.raw?.length ?? 0) + (p.url?.length ?? 0);
    if (p.data !== undefined) n += JSON.stringify(p.data)?.length ?? 0;
    else if (p.metadata && p.text === undefined && p.raw === undefined && p.url === undefined) {
      const ref = fileRefOf(p);
      if (ref) n += Math.ceil(ref.size / 3) * 4;
    }
  }
  return n;
}

/** The content of artifacts (`partsSize` of all their parts). */
export function artifactsSize(artifacts: readonly ArtifactJson[]): number {
  let n = 0;
  for (const a of artifacts) n += partsSize(a.parts);
  return n;
}

/** A run gave its task more content than `ARBITER_MAX_TASK_OUTPUT_BYTES`: the task fails `output_too_large`. */
export class OutputTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the task's output passed ${limit} bytes (ARBITER_MAX_TASK_OUTPUT_BYTES); the run was stopped`);
  }
}

/** `foldArtifacts`, or undefined when the result would hold more than `limit` of content (the fold's `size`). */
export function foldWithin(
  base: ArtifactJson[],
  events: Iterable<TaskEventBody>,
  limit: number,
): ArtifactJson[] | undefined {
  const fold = new ArtifactFold(base);
  for (const e of events) fold.add(e);
  return fold.size <= limit ? fold.release() : undefined;
}

/** Above this many artifacts a fold finds them by id through a map; below, a scan of the list is cheaper. */
const SCAN_LIMIT = 8;

/**
 * A run's artifacts, folded in place as its events come: each event costs
 * its own size, not the size of every artifact so far (a run of thousands
 * of events folds in linear time). `list()` is a copy that later events do
 * not change.
 */
export class ArtifactFold {
  private readonly artifacts: ArtifactJson[] = [];
  /** Place in `artifacts` by id, once there are more than `SCAN_LIMIT`. */
  private index: Map<string, number> | undefined;
  /** The content of the artifacts now (`partsSize`): an append adds its parts', a replacement swaps the old for its. */
  size = 0;

  /** `limit`: the most content `add` takes; the event past it is refused (`OutputTooLarge`), the fold unchanged. */
  constructor(
    base: ArtifactJson[],
    private readonly limit = Infinity,
  ) {
    for (const a of base) this.put(a);
    this.size = artifactsSize(base);
  }

  add(e: TaskEventBody): void {
    if (e.kind !== 'artifact') return;
    const { artifact, append } = e.payload;
    const at = this.find(artifact.artifactId);
    const replaced = at >= 0 && !append ? partsSize(this.artifacts[at].parts) : 0;
    const size = this.size - replaced + partsSize(artifact.parts);
    if (size > this.limit) throw new OutputTooLarge(this.limit);
    this.size = size;
    if (at < 0 || !append) {
      this.put(artifact, at);
      return;
    }
    const existing = this.artifacts[at];
    for (const part of artifact.parts) {
      const last = existing.parts[existing.parts.length - 1];
      // Consecutive text chunks merge into one text part (a new part object: listed copies keep theirs).
      if (last && typeof last.text === 'string' && typeof part.text === 'string' && !part.metadata) {
        existing.parts[existing.parts.length - 1] = extend(last, { text: last.text + part.text });
      } else if (!(typeof part.text === 'string' && part.text === '')) {
        existing.parts.push(part);
      }
    }
  }

  /** The artifacts now, in first-seen order. */
  list(): ArtifactJson[] {
    return this.artifacts.map((a) => ({ ...a, parts: [...a.parts] }));
  }

  /** The artifacts now, handed over without a copy: the fold must not be used after. */
  release(): ArtifactJson[] {
    return this.artifacts;
  }

  /** The place of the artifact with this id, or -1. */
  private find(id: string): number {
    if (this.index) return this.index.get(id) ?? -1;
    for (let i = 0; i < this.artifacts.length; i++) if (this.artifacts[i].artifactId === id) return i;
    return -1;
  }

  /** A copy of `a` at `at` (replacing what was there: it keeps its place), or last when new. */
  private put(a: ArtifactJson, at = this.find(a.artifactId)): void {
    const copy = { ...a, parts: [...a.parts] };
    if (at >= 0) {
      this.artifacts[at] = copy;
      return;
    }
    this.artifacts.push(copy);
    if (this.index) this.index.set(a.artifactId, this.artifacts.length - 1);
    else if (this.artifacts.length > SCAN_LIMIT) {
      this.index = new Map(this.artifacts.map((x, i) => [x.artifactId, i]));
    }
  }
}
