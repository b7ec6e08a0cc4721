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

  async invoke(dialect: WireDialect, call: ParsedParams, ctx: CallContext): Promise<A2aOutcome> {
    const h = this.handler;
    switch (call.op) {
      case 'send': {
        const task = await h.sendMessage(ctx, call.params);
        return {
          kind: 'task',
          taskId: task.id,
          result: dialect.sendResult(task, { historyLength: call.params.historyLength }),
        };
      }
      case 'stream':
        return streamed(dialect, await h.sendStreamingMessage(ctx, call.params));
      case 'get': {
        const task = await h.getTask(ctx, call.params);
        return {
          kind: 'task',
          taskId: task.id,
          result: dialect.task(task, { historyLength: call.params.historyLength }),
        };
      }
      case 'list':
        return { kind: 'tasks', result: dialect.list(await h.listTasks(ctx, call.params)) };
      case 'cancel': {
        const task = await h.cancelTask(ctx, call.params);
        return { kind: 'task', taskId: task.id, result: dialect.task(task, {}) };
      }
      case 'subscribe':
        return streamed(dialect, await h.subscribeToTask(ctx, call.params, dialect.replaysOnSubscribe));
      case 'push_set': {
        const config = await h.createTaskPushNotificationConfig(ctx, call.params);
        return { kind: 'push_config', taskId: config.taskId, result: dialect.pushConfig(config) };
      }
      case 'push_get': {
        const config = await h.getTaskPushNotificationConfig(ctx, call.params);
        return { kind: 'push_config', taskId: config.taskId, result: dialect.pushConfig(config) };
      }
      case 'push_list':
        return {
          kind: 'push_configs',
          result: dialect.pushConfigList(await h.listTaskPushNotificationConfigs(ctx, call.params)),
        };
      case 'push_delete':
        await h.deleteTaskPushNotificationConfig(ctx, call.params);
        return { kind: 'deleted', result: dialect.pushDeleted };
      case 'extended_card':
        return { kind: 'card', result: await h.getExtendedAgentCard(ctx, dialect.version) };
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
