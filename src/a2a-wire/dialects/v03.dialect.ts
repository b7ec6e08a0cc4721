import { A2aError } from '../a2a-errors.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import type { ArtifactJson, MessageJson, PartJson } from '../../common/a2a-json.js';
import type { TaskStateName } from '../../tasks/task-state.js';
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
import { v03PushConfig, v03PushDelete, v03PushGet, v03PushList, v03PushSet, v03SendPush } from './push-params.js';
import { got, isObject, obj, optBool, optObj, optStr, shapeOf, str, type Json } from './params.js';

const STATE_TO_V03: Record<TaskStateName, string> = {
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_REJECTED: 'rejected',
};
const STATE_FROM_V03 = Object.fromEntries(Object.entries(STATE_TO_V03).map(([k, v]) => [v, k])) as Record<
  string,
  TaskStateName
>;

function parsePart(v: unknown, field: string): PartJson {
  const p = obj(v, field);
  const metadata = optObj(p.metadata, `${field}.metadata`);
  const withMeta = (part: PartJson): PartJson => (metadata ? { ...part, metadata } : part);
  switch (p.kind) {
    case 'text':
      if (typeof p.text !== 'string') throw A2aError.invalidParams(`${field}.text`, 'is required and must be a string');
      return withMeta({ text: p.text });
    case 'data':
      // v0.3 DataPart.data is an object (the schema's `{ [key]: any }`).
      if (!isObject(p.data)) throw A2aError.invalidParams(`${field}.data`, 'is required and must be an object');
      return withMeta({ data: p.data });
    case 'file': {
      const f = obj(p.file, `${field}.file`);
      const part: PartJson = {};
      if (typeof f.bytes === 'string') part.raw = f.bytes;
      else if (typeof f.uri === 'string') part.url = str(f.uri, `${field}.file.uri`, 4096);
      else throw A2aError.invalidParams(`${field}.file`, `must have bytes or uri (got ${shapeOf(f)})`);
      const mediaType = optStr(f.mimeType, `${field}.file.mimeType`, 128);
      if (mediaType) part.mediaType = mediaType;
      const filename = optStr(f.name, `${field}.file.name`);
      if (filename) part.filename = filename;
      return withMeta(part);
    }
    default:
      // The schema's TextPart, FilePart and DataPart each require their `kind`.
      throw A2aError.invalidParams(
        `${field}.kind`,
        p.kind === undefined
          ? 'is required: "text", "data" or "file"'
          : `must be "text", "data" or "file" (got ${got(p.kind)})`,
      );
  }
}

/** The v0.3 schema's `Message` requires `kind: "message"` (every v0.3 client sends it, the SDK's included). */
function parseMessage(v: unknown, field: string): MessageJson {
  const m = obj(v, field);
  if (m.kind !== 'message') {
    // A 1.0 message (`ROLE_USER`, no kind) sent without the header that says so.
    const v1 = m.kind === undefined && typeof m.role === 'string' && m.role.startsWith('ROLE_');
    throw A2aError.invalidParams(
      `${field}.kind`,
      m.kind !== undefined
        ? `must be "message" (got ${got(m.kind)})`
        : v1
          ? 'is required: "message" — this is an A2A 1.0 message, and a request without A2A-Version is A2A 0.3; send the header A2A-Version: 1.0'
          : 'is required: "message"',
    );
  }
  // A client sends user messages.
  if (m.role !== 'user') throw A2aError.invalidParams(`${field}.role`, `must be "user" (got ${got(m.role)})`);
  if (!Array.isArray(m.parts)) {
    throw A2aError.invalidParams(`${field}.parts`, `is required and must be an array (got ${shapeOf(m.parts)})`);
  }
  return finishMessage(m, messageBase(m, 'ROLE_USER', field, parsePart), field);
}

function partToV03(p: PartJson): Json {
  const meta = p.metadata ? { metadata: p.metadata } : {};
  if (typeof p.text === 'string') return { kind: 'text', text: p.text, ...meta };
  if (p.data !== undefined) return { kind: 'data', data: p.data, ...meta };
  const file: Json = {};
  if (typeof p.raw === 'string') file.bytes = p.raw;
  if (typeof p.url === 'string') file.uri = p.url;
  if (p.mediaType) file.mimeType = p.mediaType;
  if (p.filename) file.name = p.filename;
  return { kind: 'file', file, ...meta };
}

export function messageToV03(m: MessageJson): Json {
  return {
    kind: 'message',
    messageId: m.messageId,
    role: m.role === 'ROLE_USER' ? 'user' : 'agent',
    parts: m.parts.map(partToV03),
    ...(m.contextId ? { contextId: m.contextId } : {}),
    ...(m.taskId ? { taskId: m.taskId } : {}),
    ...(m.metadata ? { metadata: m.metadata } : {}),
    ...(m.extensions?.length ? { extensions: m.extensions } : {}),
    ...(m.referenceTaskIds?.length ? { referenceTaskIds: m.referenceTaskIds } : {}),
  };
}

function artifactToV03(a: ArtifactJson): Json {
  return {
    artifactId: a.artifactId,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: a.parts.map(partToV03),
    ...(a.metadata ? { metadata: a.metadata } : {}),
  };
}

/** v0.3 (the seeds' dialect): `kind` discriminators, lowercase states, `final` on the last status. */
export class V03Dialect implements WireDialect {
  readonly version = '0.3' as const;
  readonly replaysOnSubscribe = true;
  readonly methods: Readonly<Record<string, Operation>> = {
    'message/send': 'send',
    'message/stream': 'stream',
    // The v0.3-era aliases the Vibes adapter serves (seed 004) and PocketPaw-style clients send.
    'tasks/send': 'send',
    'tasks/sendSubscribe': 'stream',
    'tasks/get': 'get',
    'tasks/list': 'list',
    'tasks/cancel': 'cancel',
    'tasks/resubscribe': 'subscribe',
    'tasks/pushNotificationConfig/set': 'push_set',
    'tasks/pushNotificationConfig/get': 'push_get',
    'tasks/pushNotificationConfig/list': 'push_list',
    'tasks/pushNotificationConfig/delete': 'push_delete',
    'agent/getAuthenticatedExtendedCard': 'extended_card',
  };

  /** v0.3 requests have no tenant field: a `tenant` key is an unknown field, ignored (§5.7). */
  tenantOf(): undefined {
    return undefined;
  }

  parse(op: Operation, p: Json): ParsedParams {
    return parseParams(op, p, {
      intStrings: false,
      message: parseMessage,
      returnImmediately: (cfg) => optBool(cfg.blocking, 'params.configuration.blocking') === false,
      sendPush: (cfg) => v03SendPush(cfg.pushNotificationConfig),
      pushSet: v03PushSet,
      pushGet: v03PushGet,
      pushList: v03PushList,
      pushDelete: v03PushDelete,
      state: (raw) => {
        const status = optStr(raw, 'params.status', 32);
        if (status === undefined) return undefined;
        const state = Object.hasOwn(STATE_FROM_V03, status) ? STATE_FROM_V03[status] : undefined;
        if (!state)
          throw A2aError.invalidParams(
            'params.status',
            `must be one of ${Object.keys(STATE_FROM_V03).join(', ')} (got ${got(status)})`,
          );
        return state;
      },
    });
  }

  task(t: TaskSnapshot, view: TaskView): Json {
    const out: Json = {
      kind: 'task',
      id: t.id,
      contextId: t.contextId,
      status: {
        state: STATE_TO_V03[t.state],
        ...(t.statusMessage ? { message: messageToV03(t.statusMessage) } : {}),
        timestamp: t.timestamp,
      },
    };
    const history = trimHistory(t.history, view.historyLength);
    if (history) out.history = history.map(messageToV03);
    if (view.includeArtifacts !== false) out.artifacts = t.artifacts.map(artifactToV03);
    out.metadata = arbiterMetadata(t);
    return out;
  }

  sendResult(t: TaskSnapshot, view: TaskView): unknown {
    return this.task(t, view);
  }

  pushConfig(view: PushConfigView): unknown {
    return v03PushConfig(view);
  }

  /** v0.3's list result is a bare array. */
  pushConfigList(views: PushConfigView[]): unknown {
    return views.map(v03PushConfig);
  }

  readonly pushDeleted = null;

  list(r: ListResult): unknown {
    return {
      tasks: r.tasks.map((t) => this.task(t, r.view)),
      nextPageToken: r.nextPageToken,
      pageSize: r.pageSize,
      totalSize: r.totalSize,
    };
  }

  streamItem(item: StreamItem, task: { id: string; contextId: string }): unknown {
    if (item.type === 'task') return this.task(item.task, item.view ?? {});
    const e = item.event;
    switch (e.kind) {
      case 'status':
        return {
          kind: 'status-update',
          taskId: task.id,
          contextId: task.contextId,
          status: {
            state: STATE_TO_V03[e.payload.state],
            ...(e.payload.message ? { message: messageToV03(e.payload.message) } : {}),
            timestamp: e.payload.timestamp,
          },
          final: item.final,
          ...(e.payload.error ? { metadata: { 'x-arbiter.error': e.payload.error } } : {}),
        };
      case 'artifact':
        return {
          kind: 'artifact-update',
          taskId: task.id,
          contextId: task.contextId,
          artifact: artifactToV03(e.payload.artifact),
          append: e.payload.append,
          lastChunk: e.payload.lastChunk,
        };
      case 'usage':
      case 'message':
      case 'text': // sub-agent text: A2A gets the whole reply as a sub_agent_response artifact
        // Token counts reach clients in the task's x-arbiter.* metadata; user messages in its history.
        return undefined;
      default: {
        const unreachable: never = e;
        return unreachable;
      }
    }
  }
}
