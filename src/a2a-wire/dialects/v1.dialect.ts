import { taskStateToJSON } from '@a2a-js/sdk';
import { A2aError } from '../a2a-errors.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import type { MessageJson, PartJson } from '../../common/a2a-json.js';
import { isTaskState, type TaskStateName } from '../../tasks/task-state.js';
import {
  arbiterMetadata,
  trimHistory,
  type ListResult,
  type Operation,
  type ParsedParams,
  type StreamItem,
  type TaskView,
  type WireDialect,
} from './dialect.js';
import { finishMessage, messageBase, parseParams } from './parse-params.js';
import type { PushConfigView } from '../push-config.js';
import { v1PushConfig, v1PushDelete, v1PushGet, v1PushList, v1PushSet, v1SendPush } from './push-params.js';
import { got, obj, optBool, optObj, optStr, shapeOf, str, type Json } from './params.js';
import { readProtoNames, REQUEST_TYPES } from './proto-names.js';

import { protoArtifactUpdate, protoStatusUpdate, protoTask } from './proto-json.js';

/** a2a.proto's `TaskState` by its number (the number itself when it names none, for the refusal to quote). */
function protoStateName(n: number): string | number {
  const name = taskStateToJSON(n);
  return name === 'UNRECOGNIZED' ? n : name;
}

/** Part's `content` oneof (a2a.proto). */
const CONTENT = ['text', 'raw', 'url', 'data'];

function parsePart(v: unknown, field: string): PartJson {
  const p = obj(v, field);
  const content = CONTENT.filter((k) => p[k] !== undefined);
  if (content.length === 0)
    throw A2aError.invalidParams(field, `must have one of ${CONTENT.join(', ')} (got ${shapeOf(p)})`);
  if (content.length > 1) {
    throw A2aError.invalidParams(field, `must have only one of ${CONTENT.join(', ')} (got ${content.join(' and ')})`);
  }
  const part: PartJson = {};
  if (p.text !== undefined) {
    if (typeof p.text !== 'string') throw A2aError.invalidParams(`${field}.text`, 'must be a string');
    part.text = p.text;
  }
  if (p.raw !== undefined) {
    if (typeof p.raw !== 'string') throw A2aError.invalidParams(`${field}.raw`, 'must be base64 text');
    part.raw = p.raw;
  }
  if (p.url !== undefined) part.url = str(p.url, `${field}.url`, 4096);
  if (p.data === null) throw A2aError.invalidParams(`${field}.data`, 'must not be null');
  if (p.data !== undefined) part.data = p.data;
  const mediaType = optStr(p.mediaType, `${field}.mediaType`, 128);
  if (mediaType) part.mediaType = mediaType;
  const filename = optStr(p.filename, `${field}.filename`, 256);
  if (filename) part.filename = filename;
  const metadata = optObj(p.metadata, `${field}.metadata`);
  if (metadata) part.metadata = metadata;
  return part;
}

export function parseV1Message(v: unknown, field: string): MessageJson {
  const m = obj(v, field);
  // A client sends user messages: ROLE_USER, by name or by number (ProtoJSON reads both).
  if (m.role !== 'ROLE_USER' && m.role !== 1) {
    throw A2aError.invalidParams(`${field}.role`, `must be ROLE_USER (got ${got(m.role)})`);
  }
  if (!Array.isArray(m.parts)) {
    throw A2aError.invalidParams(`${field}.parts`, `is required and must be an array (got ${shapeOf(m.parts)})`);
  }
  return finishMessage(m, messageBase(m, 'ROLE_USER', field, parsePart), field);
}

/**
 * §3.7: messages do not carry task outputs. A completed task's answer rides
 * on its `response` artifact, so its final status carries no copy of it (v0.3
 * keeps the seed's mapping: v0.3 clients read the answer from there).
 */
function statusMessage(state: TaskStateName, message: MessageJson | undefined): { message?: MessageJson } {
  return message && state !== 'TASK_STATE_COMPLETED' ? { message } : {};
}

/** v1.0 (spec §9, ProtoJSON as `a2a.proto` defines it). */
export class V1Dialect implements WireDialect {
  readonly version = '1.0' as const;
  readonly replaysOnSubscribe = false;
  readonly methods: Readonly<Record<string, Operation>> = {
    SendMessage: 'send',
    SendStreamingMessage: 'stream',
    GetTask: 'get',
    ListTasks: 'list',
    CancelTask: 'cancel',
    SubscribeToTask: 'subscribe',
    CreateTaskPushNotificationConfig: 'push_set',
    GetTaskPushNotificationConfig: 'push_get',
    ListTaskPushNotificationConfigs: 'push_list',
    DeleteTaskPushNotificationConfig: 'push_delete',
    GetExtendedAgentCard: 'extended_card',
  };

  /** Each operation's request message in `a2a.proto` (SendMessage and SendStreamingMessage share one). */
  private readonly requestTypes = Object.fromEntries(
    Object.entries(this.methods).map(([method, op]) => [op, REQUEST_TYPES[method]]),
  ) as Record<Operation, string>;

  parse(op: Operation, params: Json): ParsedParams {
    // ProtoJSON: every field by its JSON name or its proto name (`message_id`), read as the JSON name.
    const p = readProtoNames(this.requestTypes[op], params, 'params');
    // Every v1.0 request may name a tenant (a2a.proto): the agent's id, held to the addressed agent's (`A2aCall`).
    optStr(p.tenant, 'params.tenant');
    return parseParams(op, p, {
      intStrings: true,
      message: parseV1Message,
      returnImmediately: (cfg) => optBool(cfg.returnImmediately, 'params.configuration.returnImmediately') ?? false,
      sendPush: (cfg, taskId) => v1SendPush(cfg.taskPushNotificationConfig, taskId),
      pushSet: v1PushSet,
      pushGet: v1PushGet,
      pushList: v1PushList,
      pushDelete: v1PushDelete,
      state: (raw) => {
        // ProtoJSON: an enum by its name, or by its number (a2a.proto's TaskState).
        const status = Number.isInteger(raw) ? protoStateName(raw as number) : optStr(raw, 'params.status', 32);
        if (status === undefined || status === 'TASK_STATE_UNSPECIFIED') return undefined;
        if (typeof status !== 'string' || !isTaskState(status)) {
          throw A2aError.invalidParams('params.status', `must be a TASK_STATE_* value (got ${got(status)})`);
        }
        return status;
      },
    });
  }

  /** `tenant` has one ProtoJSON name, so it is read as sent. */
  tenantOf(params: Json): string | undefined {
    return typeof params.tenant === 'string' && params.tenant !== '' ? params.tenant : undefined;
  }

  task(t: TaskSnapshot, view: TaskView): unknown {
    const json: Json = {
      id: t.id,
      contextId: t.contextId,
      status: { state: t.state, ...statusMessage(t.state, t.statusMessage ?? undefined), timestamp: t.timestamp },
      metadata: arbiterMetadata(t),
    };
    if (view.includeArtifacts !== false) json.artifacts = t.artifacts;
    const history = trimHistory(t.history, view.historyLength);
    if (history) json.history = history;
    // Exact ProtoJSON (defaults omitted, enum names), as the SDK's generated codec writes it.
    const out = protoTask(json);
    if (view.includeArtifacts === false) delete out.artifacts;
    else if (view.includeArtifacts === true) out.artifacts ??= [];
    return out;
  }

  sendResult(t: TaskSnapshot, view: TaskView): unknown {
    return { task: this.task(t, view) };
  }

  pushConfig(view: PushConfigView): unknown {
    return v1PushConfig(view);
  }

  pushConfigList(views: PushConfigView[]): unknown {
    return { configs: views.map(v1PushConfig), nextPageToken: '' };
  }

  /** `google.protobuf.Empty`. */
  readonly pushDeleted = {};

  list(r: ListResult): unknown {
    return {
      tasks: r.tasks.map((t) => this.task(t, r.view)),
      nextPageToken: r.nextPageToken,
      pageSize: r.pageSize,
      totalSize: r.totalSize,
    };
  }

  streamItem(item: StreamItem, task: { id: string; contextId: string }): unknown {
    if (item.type === 'task') return { task: this.task(item.task, item.view ?? {}) };
    const e = item.event;
    switch (e.kind) {
      case 'status': {
        const p = e.payload;
        return {
          statusUpdate: protoStatusUpdate({
            taskId: task.id,
            contextId: task.contextId,
            status: { state: p.state, ...statusMessage(p.state, p.message), timestamp: p.timestamp },
            ...(p.error ? { metadata: { 'x-arbiter.error': p.error } } : {}),
          }),
        };
      }
      case 'artifact':
        return {
          artifactUpdate: protoArtifactUpdate({
            taskId: task.id,
            contextId: task.contextId,
            artifact: e.payload.artifact,
            append: e.payload.append,
            lastChunk: e.payload.lastChunk,
          }),
        };
      case 'message':
      case 'usage':
      case 'text': // sub-agent text: A2A gets the whole reply as a sub_agent_response artifact
        return undefined;
      default: {
        const unreachable: never = e;
        return unreachable;
      }
    }
  }
}
