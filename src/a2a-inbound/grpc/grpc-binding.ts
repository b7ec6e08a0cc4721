import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { TenantGuard } from '../../tenants/auth/access.guard.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { ParsedParams } from '../../a2a-wire/dialects/dialect.js';
import { V1Dialect } from '../../a2a-wire/dialects/v1.dialect.js';
import type { CallContext } from '../handler/a2a-request-handler.js';
import { checkParamsJson } from '../jsonrpc/envelope.js';
import { JsonRpcBinding, type Invocation } from '../jsonrpc/jsonrpc-binding.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { Metrics } from '../../metrics/metrics.service.js';
import { grpcErrorLabel } from './grpc-errors.js';
import { negotiateVersion } from '../version.js';
import {
  A2A_PACKAGE,
  A2A_ROOT,
  A2A_SERVICE,
  fromProtoJson,
  MalformedMessage,
  OversizeMessage,
  toProtoJson,
  wireSizeOf,
} from './grpc-codec.js';
import { AppConfig } from '../../config/app-config.js';
import { checkBesidesFiles } from '../http/body-size.js';

const V1 = new V1Dialect();
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
 * The gRPC binding (spec §10) of every agent, over the same typed request
 * handler as JSON-RPC and HTTP+JSON (`JsonRpcBinding.invoke`). For each call:
 * the bearer from the `authorization` metadata (the HTTP guard's check), the
 * version from `a2a-version` (this binding serves 1.0 only), the decoded
 * message turned into ProtoJSON and parsed by the v1.0 dialect like a
 * JSON-RPC `params` object, the agent named by the request's `tenant` field
 * (the card's GRPC interface carries the agent id there), then the operation;
 * its ProtoJSON result goes back through the codec into the proto reply.
 */
@Injectable()
export class GrpcBinding {
  constructor(
    private readonly binding: JsonRpcBinding,
    private readonly catalog: AgentCatalog,
    private readonly streams: OpenStreams,
    private readonly cards: AgentCardService,
    private readonly bearer: TenantGuard,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
  ) {}

  /** One A2A call counted (as the HTTP bindings' are): by method, and its error reason when it failed. */
  private count(method: GrpcMethodName, err?: unknown): void {
    this.metrics.a2aCalls.inc({
      binding: 'grpc',
      method,
      dialect: '1.0',
      error: err === undefined ? '' : grpcErrorLabel(err),
    });
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
    try {
      const principal = await this.authenticate(metadata);
      const release = this.streams.hold(principal, abort);
      try {
        const outcome = await this.invoke(method, principal, request, metadata, abort.signal);
        if (outcome.kind !== 'result') throw new Error(`${method} answered with a stream`);
        const reply = fromProtoJson(SERVICE.methods[method].resolvedResponseType!, outcome.result ?? {});
        this.count(method);
        return reply;
      } finally {
        release();
      }
    } catch (err) {
      this.count(method, err);
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
      let releases: (() => void)[] = [];
      const run = async (): Promise<void> => {
        const principal = await this.authenticate(metadata);
        releases.push(this.streams.hold(principal, abort));
        const outcome = await this.invoke(method, principal, request, metadata, abort.signal);
        if (outcome.kind !== 'stream') throw new Error(`${method} answered with a single result`);
        const { stream } = outcome;
        releases.push(stream.release);
        for await (const item of stream.items) {
          if (subscriber.closed) break;
          const frame = V1.streamItem(item, stream.task);
          if (frame !== undefined) subscriber.next(fromProtoJson(responseType, frame));
        }
        // Ended by the server because its access went (a revoked token, a disabled tenant): the status says why.
        const reason: unknown = abort.signal.reason;
        if (abort.signal.aborted && reason instanceof DomainError && reason.code === 'unauthorized') throw reason;
        subscriber.complete();
        this.count(method);
      };
      run()
        .catch((err: unknown) => {
          this.count(method, err);
          subscriber.error(err);
        })
        .finally(() => {
          for (const release of releases) release();
          releases = [];
        });
      return () => abort.abort(new DomainError('unavailable', 'the gRPC stream closed'));
    });
  }

  /** §10.2: the bearer rides in the `authorization` metadata; the same check (and 401/403) as HTTP. */
  private async authenticate(metadata: Metadata): Promise<TenantPrincipal> {
    const principal = await this.bearer.principalOf(single(metadata, 'authorization'));
    if (!('tenantId' in principal)) throw new DomainError('forbidden', 'this binding needs a tenant token (atr_…)');
    return principal;
  }

  private async invoke(
    method: GrpcMethodName,
    principal: TenantPrincipal,
    request: unknown,
    metadata: Metadata,
    signal: AbortSignal,
  ): Promise<Invocation> {
    const values = metadata.get('a2a-version').filter((v): v is string => typeof v === 'string');
    const negotiated = negotiateVersion(values, undefined);
    if (negotiated !== '1.0') {
      // §3.6.2: no version is 0.3, whose gRPC service (package a2a.v1) this server does not serve.
      const requested = typeof negotiated === 'object' ? negotiated.unsupported : (values[0] ?? '');
      throw new A2aError(
        'version_not_supported',
        `A2A-Version '${requested}' is not supported on the gRPC binding; send the metadata a2a-version: 1.0 ` +
          `(no version means 0.3, spec §3.6.2)`,
        undefined,
        { requestedVersion: requested, supportedVersions: '1.0' },
      );
    }
    if (request instanceof OversizeMessage) {
      throw new DomainError(
        'payload_too_large',
        `a ${method} request may be at most ${request.limit} bytes; this one is ${request.bytes}`,
      );
    }
    if (request instanceof MalformedMessage) {
      throw new A2aError('invalid_request', `the request is not a valid ${method} message: ${request.problem}`);
    }
    const params = toProtoJson(SERVICE.methods[method].resolvedRequestType!, request);
    checkParamsJson(params);
    const agentId = this.agentOf(params.tenant);
    const call: ParsedParams = V1.parse(V1.methods[method], params);
    // grpc-js bounds the message at the A2A body limit (files included); besides its file bytes, the plain limit.
    checkBesidesFiles(wireSizeOf(request) ?? 0, call, this.config, 'binary');
    const agent = await this.catalog.resolve(principal.tenantId, agentId);
    if (!agent) throw DomainError.notFound(`agent '${agentId}'`);
    const ctx: CallContext = { principal, agent, signal, baseUrl: this.cards.configuredBaseUrl() };
    return this.binding.invoke(V1, call, ctx);
  }

  /** The agent a request addresses: its `tenant` field (the card's GRPC interface gives each agent's). */
  private agentOf(tenant: unknown): string {
    if (typeof tenant !== 'string' || tenant === '') {
      throw A2aError.invalidParams(
        'tenant',
        "is required on the gRPC binding: the agent's id, as the tenant of the GRPC interface of its card",
      );
    }
    if (!AGENT_ID_PATTERN.test(tenant)) throw DomainError.notFound(`agent '${tenant.slice(0, 64)}'`);
    return tenant;
  }
}
