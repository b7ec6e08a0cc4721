import { Module } from '@nestjs/common';
import { StatsModule } from '../../stats/stats.module.js';
import { TenantsModule } from '../../tenants/tenants.module.js';
import { A2aInboundModule } from '../a2a-inbound.module.js';
import { GrpcBinding } from './grpc-binding.js';
import { GrpcController } from './grpc.controller.js';

/**
 * The gRPC binding's controller, around the same A2A call as the HTTP
 * bindings. Loaded (with gRPC, protobuf and Nest's microservices) only when
 * `ARBITER_GRPC_PORT` is set: `startApp` imports it then, and a server
 * without gRPC never loads those libraries.
 */
@Module({
  imports: [A2aInboundModule, TenantsModule, StatsModule],
  controllers: [GrpcController],
  providers: [GrpcBinding],
})
export class GrpcModule {}

/** The transport that serves it (see `startApp`). */
export { A2aGrpcServer } from './grpc-server.js';
