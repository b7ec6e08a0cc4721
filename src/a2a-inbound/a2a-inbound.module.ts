import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { McpModule } from '../mcp/mcp.module.js';
import { AgentCardController } from './controllers/agent-card.controller.js';
import { A2aRequestHandler } from './handler/a2a-request-handler.js';
import { JsonRpcBinding } from './jsonrpc/jsonrpc-binding.js';
import { JsonRpcController } from './jsonrpc/jsonrpc.controller.js';
import { AgentCardService } from './services/agent-card.service.js';

/** Every agent as an A2A endpoint: cards, and the JSON-RPC binding over one typed request handler. */
@Module({
  imports: [TasksModule, RegistryModule, TenantsModule, McpModule],
  controllers: [AgentCardController, JsonRpcController],
  providers: [A2aRequestHandler, JsonRpcBinding, AgentCardService],
})
export class A2aInboundModule {}
