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
  const { taskId, tenantId: _tenant, createdAt, updatedAt, ...rest } = row;
  return {
    ...rest,
    id: taskId,
    timestamp: updatedAt.toISOString(),
    artifacts,
    createdAt: createdAt.toISOString(),
  };
}
