import { isoOf } from '../common/iso-time.js';
import type { ArtifactJson, MessageJson } from '../common/a2a-json.js';
import type { TaskStateName } from './task-state.js';

/** A task row as the engine reads it (PostgreSQL names the columns so: no mapping step). */
export interface TaskRow {
  taskId: string;
  tenantId: string;
  agentId: string;
  contextId: string;
  state: TaskStateName;
  createdAt: Date;
  /** The status timestamp: when the state (or status message) last changed. */
  updatedAt: Date;
  statusMessage: MessageJson | null;
  errorMessage: string;
  history: MessageJson[];
  artifacts: ArtifactJson[];
  metadata: Record<string, unknown>;
  inputTokens: number;
  outputTokens: number;
  lastSeq: number;
}

/**
 * A task as the surfaces read it: its row, with the id as `id`, the status
 * timestamp as `timestamp`, dates as ISO text, no tenant — and, while it
 * runs, artifacts folded from the log.
 */
export type TaskSnapshot = Omit<TaskRow, 'taskId' | 'tenantId' | 'createdAt' | 'updatedAt'> & {
  id: string;
  timestamp: string;
  createdAt: string;
};

export function toSnapshot(row: TaskRow, artifacts: ArtifactJson[] = row.artifacts): TaskSnapshot {
  // Field by field rather than a rest copy: this runs for every answer, and a rest copy of a row is slow.
  return {
    agentId: row.agentId,
    contextId: row.contextId,
    state: row.state,
    statusMessage: row.statusMessage,
    errorMessage: row.errorMessage,
    history: row.history,
    metadata: row.metadata,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    lastSeq: row.lastSeq,
    id: row.taskId,
    timestamp: isoOf(row.updatedAt),
    artifacts,
    createdAt: isoOf(row.createdAt),
  };
}
