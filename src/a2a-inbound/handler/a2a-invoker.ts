import { Injectable } from '@nestjs/common';
import type { ParsedParams, StreamItem, WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { A2aRequestHandler } from './a2a-request-handler.js';
import type { A2aStream, CallContext } from './call-context.js';

/** One frame of a stream, rendered in the call's dialect: the `result` it carries and the log seq it reports. */
export interface StreamFrame {
  seq: number;
  result: unknown;
}

/**
 * What an operation answered, typed for the bindings: each writes `result`
 * (already the call's dialect's wire shape) its own way — a JSON-RPC
 * envelope, an HTTP+JSON body, a proto message — and takes the task the
 * call is about from `taskId` for its log line and span.
 */
export type A2aOutcome =
  /** SendMessage (blocking or not), GetTask, CancelTask: a task. */
  | { kind: 'task'; taskId: string; result: unknown }
  /** Create/GetTaskPushNotificationConfig: one config of a task. */
  | { kind: 'push_config'; taskId: string; result: unknown }
  /** ListTasks, ListTaskPushNotificationConfigs, GetExtendedAgentCard: about no one task. */
  | { kind: 'tasks' | 'push_configs' | 'card'; taskId?: undefined; result: unknown }
  /** DeleteTaskPushNotificationConfig: v1.0's empty object, v0.3's null (no content on HTTP+JSON). */
  | { kind: 'deleted'; taskId?: undefined; result: unknown }
  | A2aStreamOutcome;

/**
 * SendStreamingMessage, SubscribeToTask: the task's items, until it settles or ends, and each one's frame in the
 * call's dialect (none for an item the dialect does not show). The binding frames each item as it writes it: no
 * generator of its own between the log and the socket.
 */
export interface A2aStreamOutcome {
  kind: 'stream';
  taskId: string;
  items: AsyncIterable<StreamItem>;
  frame: (item: StreamItem) => StreamFrame | undefined;
  /** Frees what the stream holds (its slot): the binding calls it once the stream is over. */
  release: () => void;
}

/**
 * Dispatches one parsed call to its operation on the typed request handler
 * and renders the answer in the call's dialect. Every binding (JSON-RPC,
 * spec §9; HTTP+JSON, §11; gRPC, §10) and both dialects' method names land
 * here as the same operations.
 */
@Injectable()
export class A2aInvoker {
  constructor(private readonly handler: A2aRequestHandler) {}

  /**
   * The operation's answer, rendered once it is there: a reaction on the operation's promise per call rather than
   * an async function of its own (a frame and an await each, on every call).
   */
  invoke(dialect: WireDialect, call: ParsedParams, ctx: CallContext): Promise<A2aOutcome> {
    const h = this.handler;
    switch (call.op) {
      case 'send':
        return h.sendMessage(ctx, call.params).then((task) => ({
          kind: 'task',
          taskId: task.id,
          result: dialect.sendResult(task, { historyLength: call.params.historyLength }),
        }));
      case 'stream':
        return h.sendStreamingMessage(ctx, call.params).then((stream) => streamed(dialect, stream));
      case 'get':
        return h.getTask(ctx, call.params).then((task) => ({
          kind: 'task',
          taskId: task.id,
          result: dialect.task(task, { historyLength: call.params.historyLength }),
        }));
      case 'list':
        return h.listTasks(ctx, call.params).then((page) => ({ kind: 'tasks', result: dialect.list(page) }));
      case 'cancel':
        return h
          .cancelTask(ctx, call.params)
          .then((task) => ({ kind: 'task', taskId: task.id, result: dialect.task(task, {}) }));
      case 'subscribe':
        return h
          .subscribeToTask(ctx, call.params, dialect.replaysOnSubscribe)
          .then((stream) => streamed(dialect, stream));
      case 'push_set':
        return h
          .createTaskPushNotificationConfig(ctx, call.params)
          .then((config) => ({ kind: 'push_config', taskId: config.taskId, result: dialect.pushConfig(config) }));
      case 'push_get':
        return h
          .getTaskPushNotificationConfig(ctx, call.params)
          .then((config) => ({ kind: 'push_config', taskId: config.taskId, result: dialect.pushConfig(config) }));
      case 'push_list':
        return h
          .listTaskPushNotificationConfigs(ctx, call.params)
          .then((configs) => ({ kind: 'push_configs', result: dialect.pushConfigList(configs) }));
      case 'push_delete':
        return h
          .deleteTaskPushNotificationConfig(ctx, call.params)
          .then(() => ({ kind: 'deleted', result: dialect.pushDeleted }));
      case 'extended_card':
        return h.getExtendedAgentCard(ctx, dialect.version).then((card) => ({ kind: 'card', result: card }));
      default: {
        const unreachable: never = call;
        return unreachable;
      }
    }
  }
}

function streamed(dialect: WireDialect, stream: A2aStream): A2aStreamOutcome {
  return {
    kind: 'stream',
    taskId: stream.task.id,
    items: stream.items,
    frame: (item) => {
      const result = dialect.streamItem(item, stream.task);
      return result === undefined
        ? undefined
        : { seq: item.type === 'task' ? item.task.lastSeq : item.event.seq, result };
    },
    release: stream.release,
  };
}
