import { Module } from '@nestjs/common';
import { PushModule } from '../push/push.module.js';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { McpModule } from '../mcp/mcp.module.js';
import { QuotasModule } from '../quotas/quotas.module.js';
import { AgentCardController } from './controllers/agent-card.controller.js';
import { A2aRequestHandler } from './handler/a2a-request-handler.js';
import { JsonRpcBinding } from './jsonrpc/jsonrpc-binding.js';
import { JsonRpcController } from './jsonrpc/jsonrpc.controller.js';
import { RestController } from './rest/rest.controller.js';
import { AgentCardService } from './services/agent-card.service.js';

/**
 * Every agent as an A2A endpoint: cards, and the JSON-RPC and HTTP+JSON
 * bindings over one typed request handler. The REST controller comes last:
 * its catch-all under an agent's URL must not shadow the card routes.
 */
@Module({
  imports: [TasksModule, PushModule, RegistryModule, TenantsModule, McpModule, QuotasModule],
  controllers: [AgentCardController, JsonRpcController, RestController],
  providers: [A2aRequestHandler, JsonRpcBinding, AgentCardService],
})
export class A2aInboundModule {}
