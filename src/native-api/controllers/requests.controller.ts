import { Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { Type } from 'class-transformer';
import { AppConfig } from '../../config/app-config.js';
import { CurrentTenant, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import { CURSOR_FIELDS, decodeCursor, encodeCursor } from '../../common/cursor.js';
import { DomainError } from '../../common/errors.js';
import { PageQueryDto, DEFAULT_PAGE_SIZE } from '../../common/pagination.dto.js';
import { detachSse, releaseOnClose, type SseFrame } from '../../common/sse.js';
import { QuotaService } from '../../quotas/quota.service.js';
import { TaskService } from '../../tasks/task.service.js';
import { TaskFiles } from '../../tasks/task-files.service.js';
import type { TaskSnapshot } from '../../tasks/task-snapshot.js';
import { TASK_STATES, type TaskStateName } from '../../tasks/task-state.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { NativeTail, streamError } from '../services/native-tail.service.js';
import { ApiTags } from '@nestjs/swagger';
import { DocQuery } from '../../common/api-docs.js';

const toNative = (s: TaskStateName): string => s.replace('TASK_STATE_', '').toLowerCase().replace('_', '-');
const NATIVE_STATES = TASK_STATES.map(toNative);
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

/** The largest seq a stream resumes after (`since_seq`, `Last-Event-ID`). */
const MAX_SEQ = 2 ** 31 - 1;

/** `Last-Event-ID` as a seq: an id this server sent (0 to `MAX_SEQ`), or a 400 naming the header. */
function resumePoint(header: string | string[] | undefined): number | undefined {
  if (header === undefined || header === '') return undefined; // an empty one: some clients send it for none
  const seq = typeof header === 'string' && /^\d{1,10}$/.test(header) ? Number(header) : NaN;
  if (seq <= MAX_SEQ) return seq;
  throw DomainError.validation([
    { field: 'Last-Event-ID', messages: [`Last-Event-ID must be an event id of this stream (0 to ${MAX_SEQ})`] },
  ]);
}

class EventsQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'since_seq must be a non-negative integer' })
  @Min(0, { message: 'since_seq must be a non-negative integer' })
  @Max(MAX_SEQ)
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

/** `/v1/requests`: the native view of the same tasks and event log the A2A endpoints use. */
@ApiTags('native')
@Controller('v1/requests')
export class RequestsController {
  constructor(
    private readonly tasks: TaskService,
    private readonly tail: NativeTail,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
    private readonly quotas: QuotaService,
    private readonly files: TaskFiles,
  ) {}

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get()
  @DocQuery(RequestListQuery)
  async list(@CurrentTenant() t: TenantPrincipal, @Query() q: RequestListQuery) {
    const c = decodeCursor(q.cursor, ['u', 't'] as const, { u: CURSOR_FIELDS.timestamp, t: CURSOR_FIELDS.taskId });
    const limit = q.limit ?? DEFAULT_PAGE_SIZE;
    const { tasks, more, last } = await this.tasks.list({
      tenantId: t.tenantId,
      agentId: q.agent_id,
      contextId: q.context_id,
      state: q.state ? fromNative(q.state) : undefined,
      limit,
      before: c ? { updatedAt: c.u, taskId: c.t } : undefined,
    });
    // At most ARBITER_LIST_PAGE_BYTES of content and twice a message's file allowance of file bytes after the first.
    const page = await this.files.page(t.tenantId, { tasks, more, last }, 2 * this.config.maxMessageFileBytes);
    return {
      items: page.tasks.map(requestView),
      next_cursor: page.next ? encodeCursor({ u: page.next.updatedAt, t: page.next.taskId }) : null,
    };
  }

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get(':id')
  async get(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return requestView(await this.files.task(t.tenantId, await this.tasks.get(t.tenantId, id)));
  }

  @RequireScope('a2a:invoke')
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return requestView(await this.files.task(t.tenantId, await this.tasks.cancel(t.tenantId, id)));
  }

  /** SSE: the stored events after `since_seq` (or `Last-Event-ID`), then live ones until the end. */
  @RequireScope('a2a:invoke', 'tasks:read')
  @Get(':id/events')
  @DocQuery(EventsQuery)
  async events(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') id: string,
    @Query() q: EventsQuery,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const since = q.since_seq ?? resumePoint(req.headers['last-event-id']) ?? 0;
    const slot = this.quotas.openStream(t);
    const abort = new AbortController();
    const release = this.streams.hold(t, abort);
    let frames: AsyncIterable<SseFrame>;
    try {
      frames =
        q.format === 'log'
          ? await this.tail.openLog(t.tenantId, id, since, abort.signal)
          : await this.tail.open(t.tenantId, id, since, abort.signal);
    } catch (err) {
      release();
      slot();
      throw err;
    }
    releaseOnClose(res, slot);
    detachSse(
      res,
      frames,
      { heartbeatMs: this.config.sseHeartbeatMs, abort, onError: (err) => streamError(err, id) },
      release,
    );
  }
}
