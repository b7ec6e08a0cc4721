import type { MessageJson, PartJson } from '../../common/a2a-json.js';
import type { TaskStateName } from '../../tasks/task-state.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type Operation, type ParsedParams } from './dialect.js';
import { checkAcceptedOutputModes, checkUserMessage } from './message-input.js';
import type { PushDeleteParams, PushGetParams, PushListParams, PushSetParams, SendPushConfig } from './push-params.js';
import { optBool, optInt, optObj, optStr, optStrArray, optTimestamp, str, type Json } from './params.js';

const MAX_INT32 = 2 ** 31 - 1;

/** What differs between the dialects' params; everything else is read the same way. */
export interface ParamHooks {
  message(v: unknown, field: string): MessageJson;
  /** Whether the send returns at once (v1.0 `returnImmediately`, v0.3 `blocking: false`). */
  returnImmediately(cfg: Json): boolean;
  /** SendMessage's push config, from the configuration (the message's task id for checks). */
  sendPush(cfg: Json, messageTaskId: string | undefined): SendPushConfig | undefined;
  pushSet(p: Json): PushSetParams;
  pushGet(p: Json): PushGetParams;
  pushList(p: Json): PushListParams;
  pushDelete(p: Json): PushDeleteParams;
  /** ListTasks' `status` as sent, in the dialect's spelling → the internal state. */
  state(status: unknown): TaskStateName | undefined;
  /** Integers may come as decimal strings (ProtoJSON int32, v1.0). */
  intStrings: boolean;
}

/** The fields every message has beyond id, role and parts, then the user-message checks. */
export function finishMessage(
  m: Json,
  base: Pick<MessageJson, 'messageId' | 'role' | 'parts'>,
  field: string,
): MessageJson {
  const message: MessageJson = { ...base };
  const contextId = optStr(m.contextId, `${field}.contextId`);
  if (contextId) message.contextId = contextId;
  const taskId = optStr(m.taskId, `${field}.taskId`, 64);
  if (taskId) message.taskId = taskId;
  const metadata = optObj(m.metadata, `${field}.metadata`);
  if (metadata) message.metadata = metadata;
  const extensions = optStrArray(m.extensions, `${field}.extensions`);
  if (extensions?.length) message.extensions = extensions;
  const refs = optStrArray(m.referenceTaskIds, `${field}.referenceTaskIds`);
  if (refs?.length) message.referenceTaskIds = refs;
  checkUserMessage(message, field);
  return message;
}

/** The id, role and parts of a message, with the dialect's own part reader. */
export function messageBase(
  m: Json,
  role: MessageJson['role'],
  field: string,
  part: (v: unknown, field: string) => PartJson,
): Pick<MessageJson, 'messageId' | 'role' | 'parts'> {
  return {
    messageId: str(m.messageId, `${field}.messageId`),
    role,
    parts: (m.parts as unknown[]).map((p, i) => part(p, `${field}.parts[${i}]`)),
  };
}

/** Reads a method's params into the internal form; unknown fields are ignored (spec §5.7). */
export function parseParams(op: Operation, p: Json, hooks: ParamHooks): ParsedParams {
  switch (op) {
    case 'send':
    case 'stream': {
      const message = hooks.message(p.message, 'params.message');
      const cfg = optObj(p.configuration, 'params.configuration') ?? {};
      const acceptedOutputModes = optStrArray(cfg.acceptedOutputModes, 'params.configuration.acceptedOutputModes');
      checkAcceptedOutputModes(acceptedOutputModes, 'params.configuration.acceptedOutputModes');
      optObj(p.metadata, 'params.metadata');
      return {
        op,
        params: {
          message,
          returnImmediately: hooks.returnImmediately(cfg),
          historyLength: optInt(
            cfg.historyLength,
            'params.configuration.historyLength',
            0,
            MAX_INT32,
            hooks.intStrings,
          ),
          acceptedOutputModes,
          push: hooks.sendPush(cfg, message.taskId),
        },
      };
    }
    case 'get':
      return {
        op,
        params: {
          id: str(p.id, 'params.id'),
          historyLength: optInt(p.historyLength, 'params.historyLength', 0, MAX_INT32, hooks.intStrings),
        },
      };
    case 'list':
      return {
        op,
        params: {
          contextId: optStr(p.contextId, 'params.contextId'),
          state: hooks.state(p.status),
          pageSize: optInt(p.pageSize, 'params.pageSize', 1, MAX_PAGE_SIZE, hooks.intStrings) ?? DEFAULT_PAGE_SIZE,
          pageToken: optStr(p.pageToken, 'params.pageToken', 512),
          historyLength: optInt(p.historyLength, 'params.historyLength', 0, MAX_INT32, hooks.intStrings),
          statusTimestampAfter: optTimestamp(p.statusTimestampAfter, 'params.statusTimestampAfter'),
          includeArtifacts: optBool(p.includeArtifacts, 'params.includeArtifacts') ?? false,
        },
      };
    case 'cancel':
    case 'subscribe':
      return { op, params: { id: str(p.id, 'params.id') } };
    case 'push_set':
      return { op, params: hooks.pushSet(p) };
    case 'push_get':
      return { op, params: hooks.pushGet(p) };
    case 'push_list':
      return { op, params: hooks.pushList(p) };
    case 'push_delete':
      return { op, params: hooks.pushDelete(p) };
    case 'extended_card':
      return { op, params: p };
    default: {
      const unreachable: never = op;
      return unreachable;
    }
  }
}
