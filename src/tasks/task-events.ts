import type { ArtifactJson, MessageJson } from '../common/a2a-json.js';
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
  /** Token counts of the task so far. */
  | { kind: 'usage'; payload: { inputTokens: number; outputTokens: number } };

export type TaskEventKind = TaskEventBody['kind'];

export type StoredTaskEvent = TaskEventBody & { taskId: string; seq: number; createdAt: string };

/** An event as committed: one object shape for every kind (no spread, which costs more and varies it). */
export function stored(e: TaskEventBody, taskId: string, seq: number, createdAt: string): StoredTaskEvent {
  return { kind: e.kind, payload: e.payload, taskId, seq, createdAt } as StoredTaskEvent;
}

/** Folds artifact events into artifacts, in first-seen order (spec §4.2.2 append semantics). */
export function foldArtifacts(base: ArtifactJson[], events: Iterable<TaskEventBody>): ArtifactJson[] {
  const byId = new Map<string, ArtifactJson>(base.map((a) => [a.artifactId, { ...a, parts: [...a.parts] }]));
  for (const e of events) {
    if (e.kind !== 'artifact') continue;
    const { artifact, append } = e.payload;
    const existing = byId.get(artifact.artifactId);
    if (!existing || !append) {
      byId.set(artifact.artifactId, { ...artifact, parts: [...artifact.parts] });
      continue;
    }
    for (const part of artifact.parts) {
      const last = existing.parts[existing.parts.length - 1];
      // Consecutive text chunks merge into one text part.
      if (last && typeof last.text === 'string' && typeof part.text === 'string' && !part.metadata) {
        existing.parts[existing.parts.length - 1] = { ...last, text: last.text + part.text };
      } else if (!(typeof part.text === 'string' && part.text === '')) {
        existing.parts.push(part);
      }
    }
  }
  return [...byId.values()];
}
