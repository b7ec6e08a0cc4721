import type { IncomingHttpHeaders } from 'node:http';
import { Injectable } from '@nestjs/common';
import { extend } from '../../common/extend.js';
import type { TenantPrincipal, TenantScope } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { findJsonProblem, MAX_JSON_DEPTH } from '../../common/json-guard.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { requireScope } from '../../tenants/auth/access.guard.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { annotateActiveSpan, tracingOn } from '../../tracing/spans.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { Operation, WireDialect } from '../../a2a-wire/dialects/dialect.js';
import type { Json } from '../../a2a-wire/dialects/params.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { A2aInvoker, type A2aOutcome } from './a2a-invoker.js';
import type { CallContext } from './call-context.js';
import type { ResolvedAgent } from '../../registry/services/agents.js';
import { checkBesidesFiles } from './size-limits.js';

const INVOKE: readonly TenantScope[] = ['a2a:invoke'];

/** Who may read an agent's card, public or extended: every tenant scope (each can see the agent). */
export const CARD_SCOPES = ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'] as const satisfies TenantScope[];

/**
 * The scopes each operation accepts (any one is enough). Every A2A method
 * acts on the caller's tasks, so it needs `a2a:invoke`; the extended card
 * is readable with any tenant scope that can see the agent.
 */
export const OPERATION_SCOPES: Readonly<Record<Operation, readonly TenantScope[]>> = {
  send: INVOKE,
  stream: INVOKE,
  get: INVOKE,
  list: INVOKE,
  cancel: INVOKE,
  subscribe: INVOKE,
  push_set: INVOKE,
  push_get: INVOKE,
  push_list: INVOKE,
  push_delete: INVOKE,
  extended_card: CARD_SCOPES,
};

/** One A2A call as a binding read it from its envelope (JSON-RPC), route (HTTP+JSON) or message (gRPC). */
export interface A2aCallRequest {
  principal: TenantPrincipal;
  /** The agent the call addresses: the URL's id, or gRPC's `tenant` field. */
  agentId: string;
  /** HTTP+JSON's `/{tenant}/…` path prefix, decoded (a2a.proto's additional bindings), when the path has one. */
  pathTenant?: string;
  dialect: WireDialect;
  /** The method's name for logs, metrics and spans: JSON-RPC's as sent, the proto's for HTTP+JSON. */
  method: string;
  op: Operation;
  /**
   * The operation's request object (JSON-RPC's `params`), read once the call
   * is on the record: HTTP+JSON builds it from path, query and body, and a
   * bad one is refused as this call's.
   */
  params: () => Json;
  /** The request's size as read, and how its file bytes count (see `checkBesidesFiles`). */
  size: { bytes: number; files: 'base64' | 'binary' };
  /** The HTTP request the call came on, for the base URL of cards; none (gRPC): the configured one. */
  origin?: { protocol: string; headers: IncomingHttpHeaders };
  /** Aborted by the binding when its client goes away, and here when the tenant's access goes (`OpenStreams`). */
  abort: AbortController;
  /** The HTTP request's log line: the tenant, agent, method, dialect and task go there and on the request's span. */
  log?: Record<string, unknown>;
}

/**
 * The A2A call, the same on every binding: between "the binding has read
 * its envelope or route" and "here is a typed outcome". The call is held
 * for the tenant's access (a revoked token or a disabled tenant aborts it),
 * put on the request's record, its params checked and parsed in the dialect
 * (spec §3.6), held to the body limit besides its file bytes, its agent
 * resolved for the caller's tenant (another tenant's agent is one that does
 * not exist), and dispatched (`A2aInvoker`). Errors are thrown for the
 * binding's own translator; the binding writes the outcome.
 */
@Injectable()
export class A2aCall {
  constructor(
    private readonly invoker: A2aInvoker,
    private readonly catalog: AgentCatalog,
    private readonly streams: OpenStreams,
    private readonly cards: AgentCardService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Runs the call. A stream's outcome holds the call until its `release`
   * (the binding calls it once the stream is over); any other outcome, or
   * an error, has released it already.
   */
  async run(r: A2aCallRequest): Promise<A2aOutcome> {
    const { principal, agentId, dialect } = r;
    const held = this.streams.hold(principal, r.abort);
    try {
      if (r.log) {
        record(r.log, principal.tenantId, agentId, r.method, dialect.version);
        r.log.actor = principal.actor;
      }
      requireScope(principal, OPERATION_SCOPES[r.op], r.method);
      const params = r.params();
      checkParamsJson(params);
      const named = namedAgent(agentId, r.pathTenant, dialect.tenantOf(params));
      if (!AGENT_ID_PATTERN.test(named)) throw DomainError.notFound(`agent '${named.slice(0, 64)}'`);
      const call = dialect.parse(r.op, params);
      checkBesidesFiles(r.size.bytes, call, this.config, r.size.files);
      const found = named === agentId ? this.catalog.resolve(principal.tenantId, agentId) : undefined;
      const agent = found instanceof Promise ? await found : found;
      if (!agent) throw DomainError.notFound(`agent '${named}'`);
      const baseUrl = r.origin ? this.cards.baseUrl(r.origin) : this.cards.configuredBaseUrl();
      const outcome = await this.invoker.invoke(
        dialect,
        call,
        new LazySignalContext(principal, agent, r.abort, baseUrl),
      );
      if (r.log && outcome.taskId !== undefined) {
        r.log.task_id = outcome.taskId;
        if (tracingOn()) annotateActiveSpan({ 'a2a.task_id': outcome.taskId });
      }
      if (outcome.kind !== 'stream') {
        held();
        return outcome;
      }
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        outcome.release();
        held();
      };
      return extend(outcome, { release });
    } catch (err) {
      held();
      throw err;
    }
  }
}

/**
 * The agent a call names. Each v1.0 interface of an agent's card carries the
 * agent's id as its `tenant` (§8.3.2: clients echo it in every request's
 * `tenant` field, and the SDK's REST client as a `/{tenant}/…` path prefix),
 * so a tenant is a name of the agent, routed like the URL's: one naming any
 * other agent — another of the caller's, another tenant's, none at all — is
 * a request for an agent that this endpoint does not serve, and is answered
 * exactly as a request to that agent's own URL by a caller who has no such
 * agent (`agent '<tenant>' not found`), at the same step. No tenant: the URL's.
 */
function namedAgent(agentId: string, pathTenant: string | undefined, paramsTenant: string | undefined): string {
  if (pathTenant !== undefined && pathTenant !== agentId) return pathTenant;
  return paramsTenant !== undefined && paramsTenant !== agentId ? paramsTenant : agentId;
}

/**
 * The call's context, its signal made only when something waits on it (a stream, a send whose run has not
 * settled): most calls never read it, and making one is a noticeable part of a short call's cost. A class, so
 * the getter is not a new closure (and the object not a literal with an accessor) on every call.
 */
class LazySignalContext implements CallContext {
  constructor(
    readonly principal: TenantPrincipal,
    readonly agent: ResolvedAgent,
    private readonly abort: AbortController,
    readonly baseUrl: string | undefined,
  ) {}

  get signal(): AbortSignal {
    return this.abort.signal;
  }
}

/**
 * What the request's log line and span say of the call (the recorder counts A2A calls by these fields); the
 * span's attributes are built only when a tracing SDK records spans.
 */
function record(
  log: Record<string, unknown>,
  tenantId: string,
  agentId: string,
  method: string,
  dialect: string,
): void {
  log.tenant_id = tenantId;
  log.agent_id = agentId;
  log.a2a_method = method;
  log.dialect = dialect;
  if (tracingOn()) annotateActiveSpan({ 'a2a.method': method, 'a2a.dialect': dialect, 'arbiter.agent_id': agentId });
}

/**
 * The method's params as the rest of the system can take them: nesting no
 * deeper than `MAX_JSON_DEPTH`, no NUL characters or unpaired surrogates in
 * strings or keys. A problem is InvalidParams naming its path.
 */
export function checkParamsJson(params: Json): void {
  const problem = findJsonProblem(params, MAX_JSON_DEPTH, 'params');
  if (problem) throw A2aError.invalidParams(problem.path, problem.problem);
}
