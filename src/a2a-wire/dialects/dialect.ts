import type { Dialect } from '../a2a-errors.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import type { MessageJson } from '../../common/a2a-json.js';
import type { StoredTaskEvent } from '../../tasks/task-events.js';
import type { TaskStateName } from '../../tasks/task-state.js';
import type { PushConfigView } from '../push-config.js';
import type { PushDeleteParams, PushGetParams, PushListParams, PushSetParams, SendPushConfig } from './push-params.js';

/** The operations, by meaning; both dialects' method names map onto these. */
export type Operation =
  | 'send'
  | 'stream'
  | 'get'
  | 'list'
  | 'cancel'
  | 'subscribe'
  | 'push_set'
  | 'push_get'
  | 'push_list'
  | 'push_delete'
  | 'extended_card';

export interface SendParams {
  message: MessageJson;
  returnImmediately: boolean;
  historyLength?: number;
  acceptedOutputModes?: string[];
  /** A webhook for the task's updates (§3.1.7 via SendMessage's configuration). */
  push?: SendPushConfig;
}

export interface GetParams {
  id: string;
  historyLength?: number;
}

export interface ListParams {
  contextId?: string;
  state?: TaskStateName;
  pageSize: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: Date;
  includeArtifacts: boolean;
}

export interface IdParams {
  id: string;
}

export type ParsedParams =
  | { op: 'send' | 'stream'; params: SendParams }
  | { op: 'get'; params: GetParams }
  | { op: 'list'; params: ListParams }
  | { op: 'cancel' | 'subscribe'; params: IdParams }
  | { op: 'push_set'; params: PushSetParams }
  | { op: 'push_get'; params: PushGetParams }
  | { op: 'push_list'; params: PushListParams }
  | { op: 'push_delete'; params: PushDeleteParams }
  | { op: 'extended_card'; params: Record<string, unknown> };

export interface TaskView {
  historyLength?: number;
  includeArtifacts?: boolean;
}

export interface ListResult {
  tasks: TaskSnapshot[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
  view: TaskView;
}

/** One item of a stream: the task as it stands, or an event from its log. */
export type StreamItem =
  | { type: 'task'; task: TaskSnapshot; view?: TaskView }
  /** `final`: this event ends the stream (v0.3 marks it `final: true`). */
  | { type: 'event'; event: StoredTaskEvent; final: boolean };

/**
 * A wire dialect: parses a method's params into the internal form and
 * renders internal results in its own shapes. No business logic here.
 */
export interface WireDialect {
  readonly version: Dialect;
  /** Method name → operation, for this dialect's names. */
  readonly methods: Readonly<Record<string, Operation>>;
  /** v0.3's `tasks/resubscribe` replays the whole log; v1.0's SubscribeToTask starts from the current task. */
  readonly replaysOnSubscribe: boolean;
  parse(op: Operation, params: Record<string, unknown>): ParsedParams;
  /**
   * The `tenant` a request names (v1.0: every request message of a2a.proto
   * has one, §8.3.2), when it is a non-empty string; v0.3 has none. `parse`
   * checks its type.
   */
  tenantOf(params: Record<string, unknown>): string | undefined;
  task(task: TaskSnapshot, view: TaskView): unknown;
  /** SendMessage's result (v1.0 wraps the task; v0.3 returns it bare). */
  sendResult(task: TaskSnapshot, view: TaskView): unknown;
  list(result: ListResult): unknown;
  /** A push config as Create/Get return it (no secrets). */
  pushConfig(view: PushConfigView): unknown;
  /** ListTaskPushNotificationConfigs' result. */
  pushConfigList(views: PushConfigView[]): unknown;
  /** DeleteTaskPushNotificationConfig's result. */
  readonly pushDeleted: unknown;
  /** A stream frame's `result`, or undefined when the item has no frame in this dialect. */
  streamItem(item: StreamItem, task: { id: string; contextId: string }): unknown;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** Trims history per spec §3.2.4: unset → all, 0 → none, n → the last n. */
export function trimHistory(history: MessageJson[], historyLength: number | undefined): MessageJson[] | undefined {
  if (historyLength === undefined) return history;
  if (historyLength === 0) return undefined;
  return history.slice(-historyLength);
}

export function arbiterMetadata(t: TaskSnapshot): Record<string, unknown> {
  return {
    ...t.metadata,
    'x-arbiter.agent_id': t.agentId,
    'x-arbiter.input_tokens': t.inputTokens,
    'x-arbiter.output_tokens': t.outputTokens,
    ...(t.errorMessage ? { 'x-arbiter.error': t.errorMessage } : {}),
  };
}
