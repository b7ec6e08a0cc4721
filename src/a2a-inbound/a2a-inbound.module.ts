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
import { GrpcBinding } from './grpc/grpc-binding.js';
import { GrpcController } from './grpc/grpc.controller.js';
import { GrpcEndpoint } from './grpc/grpc-endpoint.js';
import { AgentCardService } from './services/agent-card.service.js';

/**
 * Every agent as an A2A endpoint: cards, and the JSON-RPC, HTTP+JSON and
 * gRPC bindings over one typed request handler. The REST controller comes
 * last among the HTTP ones: its catch-all under an agent's URL must not
 * shadow the card routes. The gRPC controller serves only when
 * `ARBITER_GRPC_PORT` is set (see `startApp`).
 */
@Module({
  imports: [TasksModule, PushModule, RegistryModule, TenantsModule, McpModule, QuotasModule],
  controllers: [AgentCardController, JsonRpcController, RestController, GrpcController],
  providers: [A2aRequestHandler, JsonRpcBinding, AgentCardService, GrpcBinding, GrpcEndpoint],
})
export class A2aInboundModule {}
