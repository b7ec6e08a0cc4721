import { Server, ServerCredentials } from '@grpc/grpc-js';
import { ServerGrpc, type GrpcOptions } from '@nestjs/microservices';
import type { AppConfig } from '../../config/app-config.js';
import { A2A_PACKAGE, a2aPackageDefinition } from './grpc-codec.js';

/**
 * The gRPC message limit: the A2A HTTP routes' body limit (files included), so no binding takes more than another.
 * grpc-js applies it to every method; the codec holds the methods that carry no files to `ARBITER_MAX_BODY_BYTES`.
 */
const messageLimit = (config: AppConfig): number => config.a2aBodyBytes;

/**
 * Nest's gRPC transport (`@grpc/grpc-js`, `@grpc/proto-loader`), serving
 * `lf.a2a.v1` from the package definition of `grpc-codec.ts`. It binds as
 * Nest's server does, and keeps the port it bound (port 0 picks one) for the
 * cards. Closing it (`app.close()`) cancels the calls still open: their
 * streams are released by the binding.
 */
export class A2aGrpcServer extends ServerGrpc {
  /** The bound port, once listening. */
  port?: number;

  constructor(private readonly config: AppConfig) {
    super(A2aGrpcServer.options(config));
  }

  static options(config: AppConfig): GrpcOptions['options'] {
    return {
      url: `${config.bind.includes(':') ? `[${config.bind}]` : config.bind}:${config.grpcPort ?? 0}`,
      package: A2A_PACKAGE,
      packageDefinition: a2aPackageDefinition(config.maxBodyBytes),
      maxReceiveMessageLength: messageLimit(config),
      gracefulShutdown: false,
    };
  }

  override async createClient(): Promise<Server> {
    const server = new Server({
      'grpc.max_receive_message_length': messageLimit(this.config),
      // Unanswered pings end dead connections (and with them their streams).
      'grpc.keepalive_time_ms': 60_000,
      'grpc.keepalive_timeout_ms': 20_000,
    });
    const options = A2aGrpcServer.options(this.config);
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(options.url!, ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(err) : resolve(port),
      ),
    );
    return server;
  }
}
