import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { BearerGuard } from '../../tenants/auth/access.guard.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import { V1 } from '../../a2a-wire/dialects/dialects.js';
import { A2aCall } from '../handler/a2a-call.js';
import type { A2aOutcome } from '../handler/a2a-invoker.js';
import { StatsRecorder } from '../../stats/stats-recorder.service.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { grpcErrorLabel } from './grpc-errors.js';
import { checkGrpcVersion } from '../version.js';
import {
  A2A_PACKAGE,
  A2A_ROOT,
  A2A_SERVICE,
  fromProtoJson,
  MalformedMessage,
  OversizeMessage,
  UndecodedMessage,
  toProtoJson,
  wireSizeOf,
} from './grpc-codec.js';

const SERVICE = A2A_ROOT.lookupService(`${A2A_PACKAGE}.${A2A_SERVICE}`);

/** The methods of `A2AService` (a2a.proto); the v1.0 dialect's JSON-RPC method names are the same. */
export type GrpcMethodName =
  | 'SendMessage'
  | 'SendStreamingMessage'
  | 'GetTask'
  | 'ListTasks'
  | 'CancelTask'
  | 'SubscribeToTask'
  | 'CreateTaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfig'
  | 'ListTaskPushNotificationConfigs'
  | 'DeleteTaskPushNotificationConfig'
  | 'GetExtendedAgentCard';

/** One value of a metadata key, or undefined when it is absent, repeated or binary. */
function single(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key);
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
}

/**
 * The gRPC binding (spec §10) of every agent, over the same A2A call as
 * JSON-RPC and HTTP+JSON (`A2aCall`). For each call: the bearer from the
 * `authorization` metadata (the HTTP guard's check), the version from
 * `a2a-version` (this binding serves 1.0 only), the decoded message turned
 * into ProtoJSON — the request object the v1.0 dialect parses, as a JSON-RPC
 * `params` — and the agent named by the request's `tenant` field (the card's
 * GRPC interface carries the agent id there); the outcome's ProtoJSON goes
 * back through the codec into the proto reply.
 */
@Injectable()
export class GrpcBinding {
  constructor(
    private readonly call: A2aCall,
    private readonly bearer: BearerGuard,
    private readonly metrics: Metrics,
    private readonly stats: StatsRecorder,
  ) {}

  /** One A2A call counted (as the HTTP bindings' are): by method, and its error reason when it failed. */
  private count(method: GrpcMethodName, err?: unknown, tenantId?: string): void {
    const error = err === undefined ? '' : grpcErrorLabel(err);
    this.metrics.a2aCalls.inc({ binding: 'grpc', method, dialect: '1.0', error });
    if (error && tenantId) this.stats.a2aError(tenantId, 'grpc', error);
  }

  /** A unary method: the reply message, or a thrown error (the controller's filter writes the status). */
  async unary(
    method: GrpcMethodName,
    request: unknown,
    metadata: Metadata,
    call: ServerUnaryCall<unknown, unknown>,
  ): Promise<object> {
    const abort = new AbortController();
    const onCancel = (): void => abort.abort(new DomainError('unavailable', 'the client cancelled the call'));
    call.once('cancelled', onCancel);
    let tenantId: string | undefined;
    try {
      const principal = await this.authenticate(metadata);
      tenantId = principal.tenantId;
      const outcome = await this.run(method, principal, request, metadata, abort);
      if (outcome.kind === 'stream') {
        outcome.release();
        throw new Error(`${method} answered with a stream`);
      }
      const reply = fromProtoJson(SERVICE.methods[method].resolvedResponseType!, outcome.result ?? {});
      this.count(method);
      return reply;
    } catch (err) {
      this.count(method, err, tenantId);
      throw err;
    } finally {
      call.off('cancelled', onCancel);
    }
  }

  /**
   * A server-streaming method (§10.7): `StreamResponse` messages until the
   * task ends (the handler's stream ends at a terminal or interrupted
   * state). Unsubscribing — the client cancelled, the deadline passed, the
   * server is closing — aborts the call's signal, which ends the log tail;
   * the stream slot and the held stream are released when the loop ends.
   */
  stream(method: GrpcMethodName, request: unknown, metadata: Metadata): Observable<object> {
    const responseType = SERVICE.methods[method].resolvedResponseType!;
    return new Observable<object>((subscriber) => {
      const abort = new AbortController();
      let release = (): void => undefined;
      let tenantId: string | undefined;
      const serve = async (): Promise<void> => {
        const principal = await this.authenticate(metadata);
        tenantId = principal.tenantId;
        const outcome = await this.run(method, principal, request, metadata, abort);
        if (outcome.kind !== 'stream') throw new Error(`${method} answered with a single result`);
        release = outcome.release;
        for await (const item of outcome.items) {
          if (subscriber.closed) break;
          const frame = outcome.frame(item);
          if (frame) subscriber.next(fromProtoJson(responseType, frame.result));
        }
        // Ended by the server because its access went (a revoked token, a disabled tenant): the status says why.
        const reason: unknown = abort.signal.reason;
        if (abort.signal.aborted && reason instanceof DomainError && reason.code === 'unauthorized') throw reason;
        subscriber.complete();
        this.count(method);
      };
      serve()
        .catch((err: unknown) => {
          this.count(method, err, tenantId);
          subscriber.error(err);
        })
        .finally(() => release());
      return () => abort.abort(new DomainError('unavailable', 'the gRPC stream closed'));
    });
  }

  /** §10.2: the bearer rides in the `authorization` metadata; the same check (and 401/403) as HTTP. */
  private async authenticate(metadata: Metadata): Promise<TenantPrincipal> {
    return this.bearer.tenantOf(single(metadata, 'authorization'));
  }

  /** The call of one request message: its version, size and shape checked, then the A2A call for its agent. */
  private run(
    method: GrpcMethodName,
    principal: TenantPrincipal,
    request: unknown,
    metadata: Metadata,
    abort: AbortController,
  ): Promise<A2aOutcome> {
    checkGrpcVersion(metadata.get('a2a-version').filter((v): v is string => typeof v === 'string'));
    // Decoded only now, for a caller whose token holds.
    if (request instanceof UndecodedMessage) request = request.open();
    if (request instanceof OversizeMessage) {
      const besides = request.besidesFiles ? ' besides its file bytes' : '';
      throw new DomainError(
        'payload_too_large',
        `a ${method} request may be at most ${request.limit} bytes${besides}; this one is ${request.bytes}`,
      );
    }
    if (request instanceof MalformedMessage) {
      if (request.field) throw new A2aError('invalid_params', `invalid params: ${request.problem}`, request.field);
      throw new A2aError('invalid_request', `the request is not a valid ${method} message: ${request.problem}`);
    }
    const params = toProtoJson(SERVICE.methods[method].resolvedRequestType!, request);
    return this.call.run({
      principal,
      agentId: agentOf(params.tenant),
      dialect: V1,
      method,
      op: V1.methods[method],
      params: () => params,
      // grpc-js bounds the message at the A2A body limit (files included); besides its file bytes, the plain limit.
      size: { bytes: wireSizeOf(request) ?? 0, files: 'binary' },
      abort,
    });
  }
}

/** The agent a request addresses: its `tenant` field (the card's GRPC interface gives each agent's). */
function agentOf(tenant: unknown): string {
  if (typeof tenant !== 'string' || tenant === '') {
    throw A2aError.invalidParams(
      'tenant',
      "is required on the gRPC binding: the agent's id, as the tenant of the GRPC interface of its card",
    );
  }
  return tenant;
}
