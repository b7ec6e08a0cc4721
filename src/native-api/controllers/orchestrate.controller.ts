import { Body, Controller, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { SendThrottleGuard } from '../../quotas/send-throttle.guard.js';
import type { Request, Response } from 'express';
import { CurrentTenant, type TenantPrincipal, RequireScope } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { MASTER_AGENT_ID } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { ChatDto, OrchestrateDto } from '../dto.js';
import { NativeRuns } from '../services/native-runs.service.js';
import { ApiTags } from '@nestjs/swagger';

/**
 * The native streaming API: a message in, Arbiter's event catalogue out
 * (SSE). `/v1/orchestrate` names the agent in the body (default `index`,
 * or an inline `agent_def`); `/v1/agents/:id/chat` in the path.
 */
@ApiTags('native')
@Controller()
export class OrchestrateController {
  constructor(
    private readonly runs: NativeRuns,
    private readonly catalog: AgentCatalog,
  ) {}

  @RequireScope('a2a:invoke')
  @Post('v1/orchestrate')
  @UseGuards(SendThrottleGuard)
  async orchestrate(
    @CurrentTenant() t: TenantPrincipal,
    @Body() dto: OrchestrateDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (dto.agent !== undefined && dto.agent_def !== undefined) {
      throw DomainError.validation([{ field: 'agent_def', messages: ['give agent or agent_def, not both'] }]);
    }
    await this.runs.serve(req, res, async () => {
      const agent = dto.agent_def
        ? await this.catalog.inline(dto.agent_def)
        : await this.catalog.resolve(t.tenantId, dto.agent ?? MASTER_AGENT_ID);
      if (!agent) throw DomainError.notFound(`agent '${dto.agent}'`);
      return {
        principal: t,
        agent,
        message: dto.message,
        contextId: dto.context_id,
        request: ['orchestrate', dto],
      };
    });
  }

  @RequireScope('a2a:invoke')
  @Post('v1/agents/:id/chat')
  @UseGuards(SendThrottleGuard)
  async chat(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') id: string,
    @Body() dto: ChatDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.runs.serve(req, res, async () => {
      const agent = await this.catalog.resolve(t.tenantId, id);
      if (!agent) throw DomainError.notFound(`agent '${id}'`);
      return {
        principal: t,
        agent,
        message: dto.message,
        contextId: dto.context_id,
        request: ['chat', id, dto],
      };
    });
  }
}
