import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';

/** Where the gRPC binding listens, once it does: for the cards' `GRPC` interface (spec §5.2, §10). */
@Injectable()
export class GrpcEndpoint {
  /** The bound port; undefined while gRPC is off (or not started yet). */
  port?: number;

  constructor(private readonly config: AppConfig) {}

  /**
   * The interface URL (`host:port`, as gRPC targets are written): the
   * configured public address, else the host of the HTTP base URL the card
   * was asked on, with the bound port.
   */
  address(base: string): string | undefined {
    if (this.port === undefined) return undefined;
    if (this.config.grpcPublicAddress) return this.config.grpcPublicAddress;
    let host: string;
    try {
      host = new URL(base).hostname;
    } catch {
      host = this.config.bind;
    }
    return `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${this.port}`;
  }
}
