import { Module } from '@nestjs/common';
import { A2aOutboundModule } from '../a2a-outbound/a2a-outbound.module.js';
import { McpModule } from '../mcp/mcp.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { AdminTasksController } from './controllers/admin-tasks.controller.js';
import { AdminRegistriesController } from './controllers/admin-registries.controller.js';
import { AdminTenantsController } from './controllers/admin-tenants.controller.js';

/** `/v1/admin/*`: the operator's routes (admin token only) over tenants, their tasks, and the registries as loaded. */
@Module({
  imports: [TenantsModule, TasksModule, A2aOutboundModule, McpModule],
  controllers: [AdminTenantsController, AdminTasksController, AdminRegistriesController],
})
export class AdminModule {}
