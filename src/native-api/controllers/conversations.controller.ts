import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { SendThrottleGuard } from '../../quotas/send-throttle.guard.js';
import type { Request, Response } from 'express';
import { CurrentTenant, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import { PageQueryDto } from '../../common/pagination.dto.js';
import { ConversationService } from '../services/conversations.service.js';
import { ConversationCreateDto, ConversationPatchDto, MessageDto } from '../dto.js';
import { NativeRuns } from '../services/native-runs.service.js';
import { ApiTags } from '@nestjs/swagger';
import { DocQuery } from '../../common/api-docs.js';

/** `/v1/conversations`: threads with one agent, whose earlier turns the model sees. */
@ApiTags('native')
@Controller('v1/conversations')
export class ConversationsController {
  constructor(
    private readonly conversations: ConversationService,
    private readonly runs: NativeRuns,
  ) {}

  @RequireScope('a2a:invoke')
  @Post()
  async create(@CurrentTenant() t: TenantPrincipal, @Body() dto: ConversationCreateDto) {
    return this.conversations.create(t.tenantId, dto.agent, dto.title);
  }

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get()
  @DocQuery(PageQueryDto)
  async list(@CurrentTenant() t: TenantPrincipal, @Query() q: PageQueryDto) {
    return this.conversations.list(t.tenantId, q.limit, q.cursor);
  }

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get(':id')
  get(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return this.conversations.get(t.tenantId, id);
  }

  @RequireScope('a2a:invoke')
  @Patch(':id')
  async rename(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string, @Body() dto: ConversationPatchDto) {
    return this.conversations.rename(t.tenantId, id, dto.title);
  }

  @RequireScope('a2a:invoke')
  @Delete(':id')
  @HttpCode(204)
  async delete(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string): Promise<void> {
    await this.conversations.delete(t.tenantId, id);
  }

  @RequireScope('a2a:invoke', 'tasks:read')
  @Get(':id/messages')
  messages(@CurrentTenant() t: TenantPrincipal, @Param('id') id: string) {
    return this.conversations.messages(t.tenantId, id);
  }

  /** A new message: the agent's turn streams as SSE; its reply joins the thread when the run succeeds. */
  @RequireScope('a2a:invoke')
  @Post(':id/messages')
  @UseGuards(SendThrottleGuard)
  async send(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') id: string,
    @Body() dto: MessageDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.runs.serve(req, res, async () => {
      const { conversation, agent } = await this.conversations.forMessage(t.tenantId, id);
      return {
        principal: t,
        agent,
        message: dto.message,
        contextId: conversation.id,
        request: ['conversation', conversation.id, dto],
      };
    });
  }
}
