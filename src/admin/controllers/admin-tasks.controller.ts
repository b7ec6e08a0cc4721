import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { AdminOnly, ChangedBy, type ChangeBy } from '../../common/auth.decorators.js';
import { TaskService } from '../../tasks/task.service.js';
import { TaskError } from '../../tasks/task.errors.js';
import { TenantsService } from '../../tenants/services/tenants.service.js';
import { requestView } from '../../native-api/controllers/requests.controller.js';
import { ApiTags } from '@nestjs/swagger';

/** `/v1/admin/tasks`: the operator acting on any tenant's task. */
@AdminOnly()
@ApiTags('admin')
@Controller('v1/admin/tasks')
export class AdminTasksController {
  constructor(
    private readonly tasks: TaskService,
    private readonly tenants: TenantsService,
  ) {}

  /** Cancels any tenant's unfinished task ("canceled by operator"); audited. */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @ChangedBy() by: ChangeBy) {
    const tenantId = await this.tasks.tenantOf(id);
    if (!tenantId) throw TaskError.notFound(id);
    const task = await this.tasks.cancel(tenantId, id, { reason: 'canceled by operator' });
    await this.tenants.recordAction('task.cancel', tenantId, { task_id: task.id, agent_id: task.agentId }, by);
    return { tenant_id: tenantId, ...requestView(task) };
  }
}
