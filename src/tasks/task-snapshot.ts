import type { TaskRow } from './repositories/task.repository.js';
import type { ArtifactJson, MessageJson } from '../common/a2a-json.js';
import type { TaskStateName } from './task-state.js';

/** A task as read back: the row, with artifacts folded from the log while it runs. */
export interface TaskSnapshot {
  id: string;
  contextId: string;
  agentId: string;
  state: TaskStateName;
  statusMessage: MessageJson | null;
  timestamp: string;
  errorMessage: string;
  history: MessageJson[];
  artifacts: ArtifactJson[];
  metadata: Record<string, unknown>;
  inputTokens: number;
  outputTokens: number;
  createdAt: string;
  lastSeq: number;
}

export function toSnapshot(row: TaskRow, artifacts: ArtifactJson[] = row.artifacts): TaskSnapshot {
  return {
    id: row.taskId,
    contextId: row.contextId,
    agentId: row.agentId,
    state: row.state,
    statusMessage: row.statusMessage,
    timestamp: row.updatedAt.toISOString(),
    errorMessage: row.errorMessage,
    history: row.history,
    artifacts,
    metadata: row.metadata,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    createdAt: row.createdAt.toISOString(),
    lastSeq: row.lastSeq,
  };
}
