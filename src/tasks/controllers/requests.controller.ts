import { Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { Type } from 'class-transformer';
import { AppConfig } from '../../config/app-config.js';
import { CurrentTenant, type TenantPrincipal } from '../../common/auth.decorators.js';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { PageQueryDto, DEFAULT_PAGE_SIZE } from '../../common/pagination.dto.js';
import { writeSse } from '../../common/sse.js';
import { validateAs } from '../../common/validation.js';
import { TaskService, type TaskSnapshot } from '../services/task.service.js';
import { SubscriberOverflowError, TaskError } from '../task-errors.js';
import { TASK_STATES, type TaskStateName } from '../task-state.js';

const NATIVE_STATES = TASK_STATES.map((s) => s.replace('TASK_STATE_', '').toLowerCase().replace('_', '-'));
const toNative = (s: TaskStateName): string => s.replace('TASK_STATE_', '').toLowerCase().replace('_', '-');
const fromNative = (s: string): TaskStateName => `TASK_STATE_${s.toUpperCase().replace('-', '_')}` as TaskStateName;

class RequestListQuery extends PageQueryDto {
  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'agent_id must match [A-Za-z0-9_-]{1,64}' })
  agent_id?: string;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  context_id?: string;

  @IsOptional()
  @IsIn(NATIVE_STATES)
  state?: string;
}

class EventsQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'since_seq must be a non-negative integer' })
  @Min(0, { message: 'since_seq must be a non-negative integer' })
  @Max(2 ** 31 - 1)
  since_seq?: number;

  @IsOptional()
  @IsIn(['native', 'log'])
  format?: 'native' | 'log';
}

/** The native view of a task (a task id is its request id). */
export function requestView(t: TaskSnapshot) {
  const reply = t.statusMessage?.role === 'ROLE_AGENT' ? t.statusMessage.parts.map((p) => p.text ?? '').join('') : null;
  return {
    id: t.id,
    agent_id: t.agentId,
    context_id: t.contextId,
    state: toNative(t.state),
    created_at: t.createdAt,
    updated_at: t.timestamp,
    reply,
    error: t.errorMessage || null,
    input_tokens: t.inputTokens,
    output_tokens: t.outputTokens,
    last_seq: t.lastSeq,
    artifacts: t.artifacts,
    history: t.history,
  };
}

function rest(err: unknown): unknown {
  if (!(err instanceof TaskError)) return err;
  switch (err.code) {
    case 'task_not_found':
      return DomainError.notFound('request');
    case 'task_not_cancelable':
    case 'task_terminal':
      return new DomainError('conflict', err.message);
    case 'invalid_params':
    case 'content_type_not_supported':
    case 'unsupported_operation':
    case 'push_not_supported':
    case 'extended_card_not_configured':
      return new DomainError('validation_failed', err.message);
    default: {
      const unreachable: never = err.code;
      return unreachable;
    }
  }
}

/** The last frame of a native stream that could not go on: a resume hint when it fell behind. */
export function streamError(err: unknown, requestId: string) {
  if (err instanceof SubscriberOverflowError) {
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
  return {
    event: 'error',
    data: {
      request_id: requestId,
      error_code: 'internal',
      message: `event stream failed; resume with GET /v1/requests/${requestId}/events`,
    },
  };
}

/** `/v1/requests`: the native view of the same tasks and event log the A2A endpoints use. */
@Controller('v1/requests')
export class RequestsController {
  constructor(
    private readonly tasks: TaskService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@CurrentTenant() t: TenantPrincipal, @Query() query: unknown) {
    const q = await validateAs(RequestListQuery, query);
    const c = decodeCursor(q.cursor, ['u', 't'] as const, { u: CURSOR_FIELDS.timestamp, t: CURSOR_FIELDS.taskId });
    const limit = q.limit ?? DEFAULT_PAGE_SIZE;
    const { tasks, more } = await this.tasks.list({
      tenantId: t.tenantId,
      agentId: q.agent_id,
      contextId: q.context_id,
      state: q.state ? fromNative(q.state) : undefined,
      limit,
      before: c ? { updatedAt: c.u, taskId: c.t } : undefined,
    });
    const last = tasks[tasks.length - 1];
    return {
      items: tasks.map(requestView),
      next_cursor: more && last ? encodeCursor({ u: last.timestamp, t: last.id }) : null,
    };
  }

  @Get(':id')
  async get(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    try {
      return requestView(await this.tasks.get(t.tenantId, id));
    } catch (err) {
      throw rest(err);
    }
  }

  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    try {
      return requestView(await this.tasks.cancel(t.tenantId, id));
    } catch (err) {
      throw rest(err);
    }
  }

  /** SSE: the stored events after `since_seq` (or `Last-Event-ID`), then live ones until the end. */
  @Get(':id/events')
  async events(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') id: string,
    @Query() query: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const q = await validateAs(EventsQuery, query);
    const lastEventId = req.headers['last-event-id'];
    const resume = typeof lastEventId === 'string' && /^\d{1,9}$/.test(lastEventId) ? Number(lastEventId) : undefined;
    try {
      await this.tasks.get(t.tenantId, id);
    } catch (err) {
      throw rest(err);
    }
    const abort = new AbortController();
    const since = q.since_seq ?? resume ?? 0;
    const tasks = this.tasks;
    // The native catalogue by default; `format=log` gives the stored events as they are.
    async function* frames() {
      if (q.format === 'log') {
        for await (const e of tasks.tail(id, since, abort.signal)) {
          yield { id: e.seq, event: e.kind, data: { seq: e.seq, kind: e.kind, created_at: e.createdAt, ...e.payload } };
        }
        return;
      }
      yield* tasks.nativeTail(t.tenantId, id, since, abort.signal);
    }
    await writeSse(res, frames(), {
      heartbeatMs: this.config.sseHeartbeatMs,
      abort,
      onError: (err) => streamError(err, id),
    });
  }
}
