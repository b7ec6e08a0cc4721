import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { AdminTasksController } from './controllers/admin-tasks.controller.js';
import { AdminTenantsController } from './controllers/admin-tenants.controller.js';

/** `/v1/admin/*`: the operator's routes (admin token only) over tenants and their tasks. */
@Module({
  imports: [TenantsModule, TasksModule],
  controllers: [AdminTenantsController, AdminTasksController],
})
export class AdminModule {}
