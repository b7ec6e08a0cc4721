import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Controller, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Observable } from 'rxjs';
import { A2A_SERVICE } from './grpc-codec.js';
import { GrpcBinding } from './grpc-binding.js';
import { GrpcErrors } from './grpc-errors.js';

const rpc = (name: string): MethodDecorator => GrpcMethod(A2A_SERVICE, name);

/**
 * `lf.a2a.v1.A2AService` (spec §10) on `ARBITER_GRPC_PORT`: every method
 * handed to the gRPC binding. No HTTP routes; the HTTP access guard does not
 * run here (a hybrid app's microservice has its own enhancers): the binding
 * checks the bearer in the call metadata itself.
 */
@ApiExcludeController()
@UseFilters(GrpcErrors)
@Controller()
export class GrpcController {
  constructor(private readonly grpc: GrpcBinding) {}

  @rpc('SendMessage')
  sendMessage(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('SendMessage', req, md, call);
  }

  @rpc('SendStreamingMessage')
  sendStreamingMessage(req: unknown, md: Metadata): Observable<object> {
    return this.grpc.stream('SendStreamingMessage', req, md);
  }

  @rpc('GetTask')
  getTask(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('GetTask', req, md, call);
  }

  @rpc('ListTasks')
  listTasks(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('ListTasks', req, md, call);
  }

  @rpc('CancelTask')
  cancelTask(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('CancelTask', req, md, call);
  }

  @rpc('SubscribeToTask')
  subscribeToTask(req: unknown, md: Metadata): Observable<object> {
    return this.grpc.stream('SubscribeToTask', req, md);
  }

  @rpc('CreateTaskPushNotificationConfig')
  createTaskPushNotificationConfig(
    req: unknown,
    md: Metadata,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<object> {
    return this.grpc.unary('CreateTaskPushNotificationConfig', req, md, call);
  }

  @rpc('GetTaskPushNotificationConfig')
  getTaskPushNotificationConfig(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('GetTaskPushNotificationConfig', req, md, call);
  }

  @rpc('ListTaskPushNotificationConfigs')
  listTaskPushNotificationConfigs(
    req: unknown,
    md: Metadata,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<object> {
    return this.grpc.unary('ListTaskPushNotificationConfigs', req, md, call);
  }

  @rpc('DeleteTaskPushNotificationConfig')
  deleteTaskPushNotificationConfig(
    req: unknown,
    md: Metadata,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<object> {
    return this.grpc.unary('DeleteTaskPushNotificationConfig', req, md, call);
  }

  @rpc('GetExtendedAgentCard')
  getExtendedAgentCard(req: unknown, md: Metadata, call: ServerUnaryCall<unknown, unknown>): Promise<object> {
    return this.grpc.unary('GetExtendedAgentCard', req, md, call);
  }
}
