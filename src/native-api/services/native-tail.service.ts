import { Injectable } from '@nestjs/common';
import type { SseFrame } from '../../common/sse.js';
import { EventLog } from '../../tasks/event-log/event-log.service.js';
import { TaskError } from '../../tasks/task.errors.js';
import { TaskService } from '../../tasks/task.service.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import { isTerminal } from '../../tasks/task-state.js';
import { DomainError } from '../../common/errors.js';
import { nativeFrames, type NativeFrame } from '../native-events.js';

/**
 * A native request's events as SSE frames, after a seq: the native event
 * catalogue (see native-events.ts), or the stored log as it is
 * (`format=log`). Live until the task ends, on any replica.
 */
@Injectable()
export class NativeTail {
  constructor(
    private readonly tasks: TaskService,
    private readonly log: EventLog,
    private readonly files: TaskFiles,
  ) {}

  /** The catalogue frames; checks the task first, so a missing one is a 404 before the stream starts. */
  async open(
    tenantId: string,
    taskId: string,
    afterSeq: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<NativeFrame>> {
    const task = await this.tasks.get(tenantId, taskId);
    const info = { id: task.id, agentId: task.agentId, contextId: task.contextId };
    const { tasks, log, files } = this;
    return (async function* () {
      for await (const stored of log.tail(tenantId, task.id, afterSeq, signal)) {
        const e = await files.event(tenantId, stored);
        let tokens: { input: number; output: number } | undefined;
        if (e.kind === 'status' && isTerminal(e.payload.state)) {
          const end = await tasks.get(tenantId, task.id);
          tokens = { input: end.inputTokens, output: end.outputTokens };
        }
        yield* nativeFrames(e, info, tokens);
      }
    })();
  }

  /** The stored events as they are (`format=log`). */
  async openLog(
    tenantId: string,
    taskId: string,
    afterSeq: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<SseFrame>> {
    const task = await this.tasks.get(tenantId, taskId);
    const { log, files } = this;
    return (async function* () {
      for await (const stored of log.tail(tenantId, task.id, afterSeq, signal)) {
        const e = await files.event(tenantId, stored);
        yield { id: e.seq, event: e.kind, data: { seq: e.seq, kind: e.kind, created_at: e.createdAt, ...e.payload } };
      }
    })();
  }
}

/** The last frame of a native stream that could not go on: a resume hint when it fell behind. */
export function streamError(err: unknown, requestId: string): SseFrame {
  if (err instanceof TaskError && err.reason === 'subscriber_overflow') {
    return {
      event: 'error',
      data: {
        request_id: requestId,
        error_code: 'subscriber_overflow',
        message: err.message,
        since_seq: err.resumeAfter,
        resume: `GET /v1/requests/${requestId}/events?since_seq=${err.resumeAfter}`,
      },
    };
  }
  if (err instanceof DomainError && err.code === 'unauthorized') {
    return { event: 'error', data: { request_id: requestId, error_code: 'unauthorized', message: err.message } };
  }
  return {
    event: 'error',
    data: {
      request_id: requestId,
      error_code: 'internal',
      message: `event stream failed; resume with GET /v1/requests/${requestId}/events`,
    },
  };
}
