import { Injectable } from '@nestjs/common';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import type { ResolvedAgent } from '../../registry/services/agent-catalog.service.js';
import { TaskService, type TaskSnapshot } from '../../tasks/services/task.service.js';
import { isSettled, isTerminal } from '../../tasks/task-state.js';
import { A2aError } from '../a2a-errors.js';
import type { ParsedParams, SendParams, StreamItem, TaskView, WireDialect } from '../dialects/dialect.js';
import { AppConfig } from '../../config/app-config.js';
import { Lifecycle } from '../../health/lifecycle.service.js';
import { renderParts } from '../dialects/message-input.js';

export interface CallContext {
  tenantId: string;
  agent: ResolvedAgent;
  /** Aborted when the client goes away; stops streams (never the task). */
  signal: AbortSignal;
}

export type DispatchResult =
  | { type: 'unary'; result: unknown }
  | { type: 'stream'; task: { id: string; contextId: string }; items: AsyncIterable<StreamItem> };

/**
 * The A2A operations (spec §3.1), one request handler behind both wire
 * dialects: it works on internal shapes and asks the dialect to render.
 */
@Injectable()
export class A2aDispatcher {
  constructor(
    private readonly tasks: TaskService,
    private readonly config: AppConfig,
    private readonly lifecycle: Lifecycle,
  ) {}

  async dispatch(call: ParsedParams, ctx: CallContext, dialect: WireDialect): Promise<DispatchResult> {
    switch (call.op) {
      case 'send': {
        const { task, view } = await this.send(call.params, ctx, !call.params.returnImmediately);
        return { type: 'unary', result: dialect.sendResult(task, view) };
      }
      case 'stream':
        return this.stream(call.params, ctx);
      case 'get': {
        const task = await this.tasks.get(ctx.tenantId, call.params.id, ctx.agent.id);
        return { type: 'unary', result: dialect.task(task, { historyLength: call.params.historyLength }) };
      }
      case 'list':
        return { type: 'unary', result: dialect.list(await this.list(call.params, ctx)) };
      case 'cancel': {
        const task = await this.tasks.cancel(ctx.tenantId, call.params.id, ctx.agent.id);
        return { type: 'unary', result: dialect.task(task, {}) };
      }
      case 'subscribe':
        return this.subscribe(call.params.id, ctx, dialect);
      case 'push_set':
      case 'push_get':
      case 'push_list':
      case 'push_delete':
        throw new A2aError(
          'push_not_supported',
          'push notifications are not supported by this agent (its card says pushNotifications: false); use streaming or polling',
        );
      case 'extended_card':
        throw new A2aError(
          'unsupported_operation',
          'this agent has no authenticated extended card (its card says extendedAgentCard: false)',
        );
      default: {
        const unreachable: never = call;
        return unreachable;
      }
    }
  }

  private async start(
    p: SendParams,
    ctx: CallContext,
  ): Promise<{ taskId: string; afterSeq: number; created?: TaskSnapshot }> {
    if (this.lifecycle.shuttingDown) {
      // Retryable: another replica (or this one, restarted) takes the message.
      throw new A2aError('internal', 'server is shutting down; retry the request', undefined, { retryable: 'true' });
    }
    if (p.pushConfigRequested) {
      throw new A2aError('push_not_supported', 'push notifications are not supported by this agent');
    }
    const text = renderParts(p.message.parts, 'params.message.parts', this.config.maxTextFileBytes);
    const input = { tenantId: ctx.tenantId, agent: ctx.agent, message: p.message, text };
    if (p.message.taskId) {
      const { taskId, seq } = await this.tasks.continue({ ...input, taskId: p.message.taskId });
      return { taskId, afterSeq: seq };
    }
    const { taskId, snapshot } = await this.tasks.create(input);
    return { taskId, afterSeq: 0, created: snapshot };
  }

  private async send(
    p: SendParams,
    ctx: CallContext,
    blocking: boolean,
  ): Promise<{ task: TaskSnapshot; view: TaskView }> {
    const { taskId, afterSeq, created } = await this.start(p, ctx);
    const task = blocking
      ? await this.tasks.settled(ctx.tenantId, taskId, afterSeq)
      : (created ?? (await this.tasks.get(ctx.tenantId, taskId)));
    return { task, view: { historyLength: p.historyLength } };
  }

  private async stream(p: SendParams, ctx: CallContext): Promise<DispatchResult> {
    const { taskId, created, afterSeq } = await this.start(p, ctx);
    const first = created ?? (await this.tasks.get(ctx.tenantId, taskId));
    return {
      type: 'stream',
      task: { id: first.id, contextId: first.contextId },
      // A continuation's stream ends at a settled state written after its message, not at the one it continued.
      items: this.follow(first, ctx.signal, isSettled, afterSeq, { historyLength: p.historyLength }),
    };
  }

  private async subscribe(id: string, ctx: CallContext, dialect: WireDialect): Promise<DispatchResult> {
    const task = await this.tasks.get(ctx.tenantId, id, ctx.agent.id);
    const ref = { id: task.id, contextId: task.contextId };
    if (dialect.version === '1.0') {
      // Spec §3.1.6: the current Task first, then live events until terminal; a terminal task is an error.
      if (isTerminal(task.state)) {
        throw new A2aError(
          'unsupported_operation',
          `task '${task.id}' is ${task.state}; there is nothing to subscribe to`,
        );
      }
      return { type: 'stream', task: ref, items: this.follow(task, ctx.signal, isTerminal, 0, {}) };
    }
    // v0.3 tasks/resubscribe (seed 002): replay the log, then tail; a terminal task gets one final status.
    if (isTerminal(task.state)) {
      return { type: 'stream', task: ref, items: finalStatusOnly(task) };
    }
    return { type: 'stream', task: ref, items: this.replay(task.id, ctx.signal) };
  }

  private async *follow(
    first: TaskSnapshot,
    signal: AbortSignal,
    stopAt: (state: string) => boolean,
    afterSeq: number,
    view: TaskView,
  ): AsyncGenerator<StreamItem> {
    yield { type: 'task', task: first, view };
    if (isTerminal(first.state) || (afterSeq === 0 && stopAt(first.state))) return;
    for await (const event of this.tasks.tail(first.id, first.lastSeq, signal)) {
      const final = event.kind === 'status' && event.seq > afterSeq && stopAt(event.payload.state);
      yield { type: 'event', event, final };
      if (final) return;
    }
  }

  private async *replay(taskId: string, signal: AbortSignal): AsyncGenerator<StreamItem> {
    for await (const event of this.tasks.tail(taskId, 0, signal)) {
      yield { type: 'event', event, final: event.kind === 'status' && isTerminal(event.payload.state) };
    }
  }

  private async list(p: ParsedParams & { op: 'list' } extends { params: infer P } ? P : never, ctx: CallContext) {
    let before: { updatedAt: string; taskId: string } | undefined;
    try {
      const c = decodeCursor(p.pageToken, ['u', 't'] as const, { u: CURSOR_FIELDS.timestamp, t: CURSOR_FIELDS.taskId });
      before = c ? { updatedAt: c.u, taskId: c.t } : undefined;
    } catch (err) {
      if (err instanceof DomainError)
        throw A2aError.invalidParams('params.pageToken', 'is not a token this server issued');
      throw err;
    }
    const { tasks, total, more } = await this.tasks.list({
      tenantId: ctx.tenantId,
      agentId: ctx.agent.id,
      contextId: p.contextId,
      state: p.state,
      updatedAfter: p.statusTimestampAfter,
      limit: p.pageSize,
      before,
    });
    const last = tasks[tasks.length - 1];
    return {
      tasks,
      nextPageToken: more && last ? encodeCursor({ u: last.timestamp, t: last.id }) : '',
      pageSize: p.pageSize,
      totalSize: total,
      view: { historyLength: p.historyLength, includeArtifacts: p.includeArtifacts },
    };
  }
}

async function* finalStatusOnly(task: TaskSnapshot): AsyncGenerator<StreamItem> {
  await Promise.resolve();
  yield {
    type: 'event',
    final: true,
    event: {
      taskId: task.id,
      seq: task.lastSeq,
      createdAt: task.timestamp,
      kind: 'status',
      payload: {
        state: task.state,
        ...(task.statusMessage ? { message: task.statusMessage } : {}),
        ...(task.errorMessage ? { error: task.errorMessage } : {}),
        timestamp: task.timestamp,
      },
    },
  };
}
