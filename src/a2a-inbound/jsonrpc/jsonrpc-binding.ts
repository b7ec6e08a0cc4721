import { Injectable } from '@nestjs/common';
import type { ParsedParams, WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { A2aRequestHandler, type A2aStream, type CallContext } from '../handler/a2a-request-handler.js';

/** A method's outcome on the wire: a result object, or a stream of events. */
export type Invocation = { kind: 'result'; result: unknown } | { kind: 'stream'; stream: A2aStream };

/**
 * One parsed call → the typed request handler → the dialect's rendering.
 * Both bindings (JSON-RPC, spec §9, and HTTP+JSON, §11) and both dialects'
 * method names land here as the same operations; only the parsing of the
 * envelope and the writing of the reply differ per binding.
 */
@Injectable()
export class JsonRpcBinding {
  constructor(private readonly handler: A2aRequestHandler) {}

  async invoke(dialect: WireDialect, call: ParsedParams, ctx: CallContext): Promise<Invocation> {
    const h = this.handler;
    const result = (r: unknown): Invocation => ({ kind: 'result', result: r });
    switch (call.op) {
      case 'send': {
        const task = await h.sendMessage(ctx, call.params);
        return result(dialect.sendResult(task, { historyLength: call.params.historyLength }));
      }
      case 'stream':
        return { kind: 'stream', stream: await h.sendStreamingMessage(ctx, call.params) };
      case 'get':
        return result(dialect.task(await h.getTask(ctx, call.params), { historyLength: call.params.historyLength }));
      case 'list':
        return result(dialect.list(await h.listTasks(ctx, call.params)));
      case 'cancel':
        return result(dialect.task(await h.cancelTask(ctx, call.params), {}));
      case 'subscribe':
        return { kind: 'stream', stream: await h.subscribeToTask(ctx, call.params, dialect.replaysOnSubscribe) };
      case 'push_set':
        return result(dialect.pushConfig(await h.createTaskPushNotificationConfig(ctx, call.params)));
      case 'push_get':
        return result(dialect.pushConfig(await h.getTaskPushNotificationConfig(ctx, call.params)));
      case 'push_list':
        return result(dialect.pushConfigList(await h.listTaskPushNotificationConfigs(ctx, call.params)));
      case 'push_delete':
        await h.deleteTaskPushNotificationConfig(ctx, call.params);
        return result(dialect.pushDeleted);
      case 'extended_card':
        return result(h.getExtendedAgentCard(ctx, dialect.version));
      default: {
        const unreachable: never = call;
        return unreachable;
      }
    }
  }
}
