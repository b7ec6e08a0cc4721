import { Module } from '@nestjs/common';
import { PushModule } from '../push/push.module.js';
import { RegistryModule } from '../registry/registry.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TenantsModule } from '../tenants/tenants.module.js';
import { McpModule } from '../mcp/mcp.module.js';
import { StatsModule } from '../stats/stats.module.js';
import { QuotasModule } from '../quotas/quotas.module.js';
import { AgentCardController } from './controllers/agent-card.controller.js';
import { A2aCall } from './handler/a2a-call.js';
import { A2aInvoker } from './handler/a2a-invoker.js';
import { A2aRequestHandler } from './handler/a2a-request-handler.js';
import { MessageIntake } from './handler/message-intake.js';
import { TaskStreams } from './handler/task-streams.js';
import { JsonRpcBinding } from './jsonrpc/jsonrpc-binding.js';
import { RestBinding } from './rest/rest-binding.js';
import { A2aHttpController } from './http/a2a-http.controller.js';
import { GrpcEndpoint } from './grpc/grpc-endpoint.js';
import { AgentCardService } from './services/agent-card.service.js';
import { CardSigner } from './services/card-signer.service.js';
import { UpstreamCards } from './services/upstream-card.js';
import { A2aOutboundModule } from '../a2a-outbound/a2a-outbound.module.js';

/**
 * Every agent as an A2A endpoint: cards, and the JSON-RPC, HTTP+JSON and
 * gRPC bindings, each reading its own envelope and writing its own reply
 * around one A2A call (`A2aCall` → `A2aInvoker` → `A2aRequestHandler`).
 * The two HTTP bindings are reached through `A2aHttpController`, which
 * registers itself on the HTTP adapter's server ahead of Nest's router
 * (see its doc); the cards are Nest routes. The gRPC binding is a module of
 * its own (`GrpcModule`), loaded only when `ARBITER_GRPC_PORT` is set (see
 * `startApp`).
 */
@Module({
  imports: [
    TasksModule,
    PushModule,
    RegistryModule,
    TenantsModule,
    McpModule,
    QuotasModule,
    StatsModule,
    A2aOutboundModule,
  ],
  controllers: [AgentCardController],
  providers: [
    A2aRequestHandler,
    UpstreamCards,
    MessageIntake,
    TaskStreams,
    A2aInvoker,
    A2aCall,
    JsonRpcBinding,
    RestBinding,
    A2aHttpController,
    AgentCardService,
    CardSigner,
    GrpcEndpoint,
  ],
  exports: [A2aCall, GrpcEndpoint],
})
export class A2aInboundModule {}
