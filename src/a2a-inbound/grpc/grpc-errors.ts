import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { Catch, Logger, type RpcExceptionFilter } from '@nestjs/common';
import protobuf from 'protobufjs';
import { throwError, type Observable } from 'rxjs';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { toRestError } from '../rest/rest-errors.js';

/** The trailer that carries a `google.rpc.Status` with its details (the gRPC "richer error model"). */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

/** The `google.rpc` messages of the error model (googleapis' status.proto and error_details.proto, the parts used). */
const RPC_PROTO = `
syntax = "proto3";
package google.rpc;
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
message BadRequest {
  message FieldViolation { string field = 1; string description = 2; }
  repeated FieldViolation field_violations = 1;
}
`;

const rpc = protobuf.parse(RPC_PROTO, { keepCase: false }).root;
const StatusType = rpc.lookupType('google.rpc.Status');
export const DETAIL_TYPES: Readonly<Record<string, protobuf.Type>> = {
  'type.googleapis.com/google.rpc.ErrorInfo': rpc.lookupType('google.rpc.ErrorInfo'),
  'type.googleapis.com/google.rpc.BadRequest': rpc.lookupType('google.rpc.BadRequest'),
};

/** A `google.rpc.Code` name (as §11.6's body spells it) → the gRPC status code. */
function codeOf(name: string): GrpcStatus {
  const code = (GrpcStatus as unknown as Record<string, unknown>)[name];
  return typeof code === 'number' ? code : GrpcStatus.INTERNAL;
}

/** What a gRPC handler fails with: grpc-js sends `code`, `details` as the status message, and `metadata` as trailers. */
export interface GrpcServiceError {
  code: GrpcStatus;
  details: string;
  metadata: Metadata;
}

/**
 * The gRPC binding's error translator (spec §10.6): the same mapping as the
 * HTTP+JSON binding's (`toRestError`: the A2A reason → the `google.rpc.Code`
 * of §5.4, a `BadRequest` naming an invalid field, transient failures as
 * UNAVAILABLE), written as a gRPC status whose `grpc-status-details-bin`
 * trailer holds the `google.rpc.Status` with an `ErrorInfo`
 * (`domain: a2a-protocol.org`) for every A2A error. An unexpected error is
 * INTERNAL "internal error"; its text goes to `onUnexpected` only.
 */
export function toGrpcError(err: unknown, onUnexpected?: (err: unknown) => void): GrpcServiceError {
  const { body } = toRestError(err, onUnexpected);
  // Too large is RESOURCE_EXHAUSTED on gRPC (HTTP+JSON says OUT_OF_RANGE for a 413), as grpc-js itself answers a
  // message over its receive limit.
  const tooLarge = err instanceof DomainError && err.code === 'payload_too_large';
  const code = tooLarge ? GrpcStatus.RESOURCE_EXHAUSTED : codeOf(body.error.status);
  const details = body.error.details.flatMap((d) => {
    const typeUrl = String(d['@type']);
    const type = DETAIL_TYPES[typeUrl];
    if (!type) return [];
    const fields = Object.fromEntries(Object.entries(d).filter(([k]) => k !== '@type'));
    return [{ typeUrl, value: type.encode(type.fromObject(fields)).finish() }];
  });
  const status = StatusType.encode(StatusType.fromObject({ code, message: body.error.message, details })).finish();
  const metadata = new Metadata();
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(status));
  return { code, details: body.error.message, metadata };
}

/** The `ErrorInfo` reason of an error (else its status name), for metrics; nothing is logged. */
export function grpcErrorLabel(err: unknown): string {
  const { body } = toRestError(err);
  const info = body.error.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  return typeof info?.reason === 'string' ? info.reason : body.error.status;
}

/** Decodes a `grpc-status-details-bin` value (for tests and diagnostics): the status and its details as objects. */
export function decodeStatusDetails(bytes: Buffer): {
  code: number;
  message: string;
  details: Record<string, unknown>[];
} {
  const status = StatusType.toObject(StatusType.decode(bytes), { defaults: true }) as {
    code: number;
    message: string;
    details: { typeUrl: string; value: Uint8Array }[];
  };
  return {
    code: status.code,
    message: status.message,
    details: status.details.map((d) => {
      const type = DETAIL_TYPES[d.typeUrl];
      return { '@type': d.typeUrl, ...(type ? type.toObject(type.decode(d.value), { defaults: false }) : {}) };
    }),
  };
}

const logger = new Logger('A2A-gRPC');

/**
 * Every error of a gRPC handler — the bearer, the version, the request, the
 * handler's own — leaves as a §10.6 status (Nest's default RPC filter would
 * turn it into an unstructured "Internal server error").
 */
@Catch()
export class GrpcErrors implements RpcExceptionFilter {
  catch(err: unknown): Observable<never> {
    const error = toGrpcError(err, (e) => logger.error({ err: safeError(e) }, 'gRPC request failed'));
    return throwError(() => error);
  }
}
