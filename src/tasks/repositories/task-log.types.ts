import type { ArtifactJson, MessageJson } from '../../common/a2a-json.js';
import type { StoredTaskEvent, TaskEventBody } from '../task-events.js';
import type { NewTaskFile } from '../task-files.js';
import type { TaskRow } from '../task-snapshot.js';
import type { TaskStateName } from '../task-state.js';

/** Who runs a task: its owner (a process instance id) and how long the claim holds without renewal. */
export interface Lease {
  owner: string;
  ms: number;
}

/** A task to create (see `TaskLogWriter.create`). */
export interface NewTask {
  taskId: string;
  messageId: string;
  /** `messageHash` of the message that creates it. */
  messageHash: string;
  /** The tenant's running-task cap (0: none): the creation is refused when its run would pass it. */
  runningCap?: number;
  /** A request budget applies: the message is counted (`usage_requests`) by the statement that takes it. */
  countRequest?: boolean;
  tenantId: string;
  agentId: string;
  contextId: string;
  metadata: Record<string, unknown>;
  /** The push notification config the creating message carries, stored by the creation's statement. */
  push?: NewPushConfig;
}

/**
 * A push notification config stored with the task it is for (`push_configs`), its secrets already sealed
 * (`PushConfigRepository.sealedConfig`): a new task's webhook hears of every update from the first, and a task
 * never runs without the config its message asked for.
 */
export interface NewPushConfig {
  /** The row's id. */
  id: string;
  configId: string;
  dialect: string;
  url: string;
  token: string | null;
  authScheme: string | null;
  credentials: string | null;
}

/** Row changes that go with an append, applied in the same statement. */
export interface TaskRowChange {
  /** Claim the task for a run (a lease), or release the claim (null). */
  lease?: Lease | null;
  state?: TaskStateName;
  statusMessage?: MessageJson | null;
  errorMessage?: string;
  historyAppend?: MessageJson[];
  artifacts?: ArtifactJson[];
  tokens?: { input: number; output: number };
  /** Write only if the task has no user message after this seq (a run settling after taking its input). */
  inputsUpTo?: number;
  /** Keys merged into the task's metadata (a remote-backed agent's upstream task, `x-arbiter.upstream_*`). */
  metadata?: Record<string, unknown>;
  /** Files the events refer to (a tool wrote them), stored in the same statement. */
  files?: NewTaskFile[];
  /** Write only while the task is leased to this owner (a run whose task another replica took over writes nothing). */
  owner?: string;
}

/** What an append committed: its events, and the task row after it when the append changed the state. */
export interface Appended {
  events: StoredTaskEvent[];
  row?: TaskRow;
}

/** A task's row as a continuation found it (in the same statement that wrote the message). */
export type ResumedRow = Pick<TaskRow, 'history' | 'artifacts' | 'inputTokens' | 'outputTokens'>;

/** What a continuation committed (see `TaskLogWriter.continueWith`). */
export interface Continued {
  events: StoredTaskEvent[];
  /** The task was interrupted and is now leased to the caller, who must start its run. */
  started: boolean;
  /** What that run starts from: the history before this message, artifacts, tokens. */
  row: ResumedRow;
}

/** A `status` event's payload. */
export type StatusPayload = Extract<TaskEventBody, { kind: 'status' }>['payload'];

/**
 * Which tasks an end from outside their runs applies to: one task, every
 * unfinished task of a tenant, or running tasks whose owner stopped renewing
 * its lease (`restarted`: every running task not owned by `owner`, for the
 * embedded database's single process at start). `held` are runs alive here.
 */
export type EndScope =
  /** `owner`: only while the task is leased to it (a run's own end, retried after an outage). */
  | { kind: 'task'; tenantId: string; taskId: string; owner?: string }
  | { kind: 'tenant'; tenantId: string }
  /**
   * Running tasks whose lease ran out and whose owner is `gone` (judged by
   * `LeaseService`), or is `owner` (this replica) without holding them; or,
   * `restarted`, every running task not leased to `owner` (the embedded
   * database at start).
   */
  | {
      kind: 'orphans';
      owner: string;
      held: string[];
      gone: string[];
      restarted?: boolean;
      /** Leave the `gone` owners' tasks that follow an upstream task: they are taken over, not ended. */
      resumable?: boolean;
    };

/** A task an end applies to, as locked before writing it. */
export interface EndCandidate {
  taskId: string;
  tenantId: string;
  lastSeq: number;
  artifacts: ArtifactJson[];
}

/** Anything that runs SQL: the DataSource, or a transaction's EntityManager. */
export interface Queryable {
  query<T = unknown>(sql: string, params?: unknown[]): Promise<T>;
}
