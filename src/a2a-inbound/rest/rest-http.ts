import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { CLIENT_GONE, releaseOnClose, writeSse } from '../../common/sse.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { annotateActiveSpan } from '../../tracing/spans.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { Operation, WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { V03Dialect } from '../../a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../a2a-wire/dialects/v1.dialect.js';
import type { A2aStream } from '../handler/a2a-request-handler.js';
import type { HttpExchange } from '../http/exchange.js';
import { checkBesidesFiles } from '../http/body-size.js';
import { checkParamsJson } from '../jsonrpc/envelope.js';
import { JsonRpcBinding } from '../jsonrpc/jsonrpc-binding.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { negotiateVersion } from '../version.js';
import { toRestError } from './rest-errors.js';
import { matchRoute, restParams } from './rest-routes.js';

const V1 = new V1Dialect();
const V03 = new V03Dialect();

/** Spec §11.1: `application/a2a+json` for v1.0; v0.3's REST said `application/json`. */
const contentType = (d: WireDialect): string =>
  d.version === '1.0' ? 'application/a2a+json; charset=utf-8' : 'application/json; charset=utf-8';

/** The proto's method name of each operation: one `a2a_method` vocabulary for every binding in logs and metrics. */
const V1_METHOD_OF = Object.fromEntries(Object.entries(V1.methods).map(([name, op]) => [op, name])) as Record<
  Operation,
  string
>;

/**
 * The HTTP+JSON/REST binding (spec §11) under every agent's URL, on the A2A
 * HTTP edge: `POST message:send`, `POST message:stream`, `GET tasks/{id}`,
 * `GET tasks`, `POST tasks/{id}:cancel`, `POST tasks/{id}:subscribe`, the
 * push-config routes and `GET extendedAgentCard`. It reads the version
 * (§3.6: header or query; 1.0 answers in v1.0 ProtoJSON, an absent or 0.3
 * version in the v0.3 dialect's shapes), turns path, query and body into the
 * operation's request object, and hands it to the same binding-agnostic
 * invoke as JSON-RPC. Everything that fails — the bearer (401, checked
 * before the body is read), the body (413, 415, malformed JSON), an unknown
 * route or method — is answered in §11.6's shape.
 */
@Injectable()
export class RestHttp {
  private readonly logger = new Logger('A2A-REST');

  constructor(
    private readonly binding: JsonRpcBinding,
    private readonly catalog: AgentCatalog,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
    private readonly cards: AgentCardService,
  ) {}

  /** Writes an error in §11.6's shape, unless the response has already begun. */
  refuse(x: HttpExchange, err: unknown, dialect: WireDialect = V1): void {
    if (!x.open) return;
    const { status, body, headers } = toRestError(err, (e) =>
      this.logger.error({ err: safeError(e), request_id: x.id }, 'HTTP+JSON request failed'),
    );
    const reason = (body.error.details.find((d) => 'reason' in d) as { reason?: string } | undefined)?.reason;
    x.log.rest_error = reason ?? body.error.status;
    x.closeIfUnread();
    for (const [k, v] of Object.entries(headers)) x.header(k, v);
    x.send(status, contentType(dialect), JSON.stringify(body));
  }

  /**
   * One call: `t` has been authenticated; `sub` is the path under the
   * agent's URL, still percent-encoded; `body` the parsed JSON body, if any.
   */
  async serve(x: HttpExchange, t: TenantPrincipal, agentId: string, sub: string, body: unknown): Promise<void> {
    let dialect: WireDialect = V1;
    const abort = new AbortController();
    const release = this.streams.hold(t, abort);
    const { res } = x;
    const onClose = (): void => abort.abort(CLIENT_GONE);
    res.once('close', onClose);
    try {
      if (!AGENT_ID_PATTERN.test(agentId)) throw DomainError.notFound(`agent '${agentId.slice(0, 64)}'`);
      const method = x.req.method ?? '';
      const route = matchRoute(method, sub);
      if (route.kind === 'not_found') {
        throw new A2aError('method_not_found', `no HTTP+JSON route ${method} /${sub.slice(0, 128)} (spec §11.3)`);
      }
      if (route.kind === 'method_not_allowed') {
        x.header('Allow', route.allow.join(', '));
        throw new DomainError('method_not_allowed', `use ${route.allow.join(' or ')} for /${sub.slice(0, 128)}`);
      }
      const negotiated = negotiateVersion(x.req.headers['a2a-version'], x.query['A2A-Version']);
      if (typeof negotiated === 'object') {
        throw new A2aError(
          'version_not_supported',
          `A2A-Version '${negotiated.unsupported}' is not supported; supported: 1.0, 0.3`,
          undefined,
          { requestedVersion: negotiated.unsupported, supportedVersions: '1.0,0.3' },
        );
      }
      dialect = negotiated === '1.0' ? V1 : V03;
      const line = x.log;
      line.tenant_id = t.tenantId;
      line.agent_id = agentId;
      line.a2a_method = V1_METHOD_OF[route.op];
      line.dialect = dialect.version;
      annotateActiveSpan({
        'a2a.method': V1_METHOD_OF[route.op],
        'a2a.dialect': dialect.version,
        'arbiter.agent_id': agentId,
      });
      const params = restParams(route, x.query, body, dialect.version);
      checkParamsJson(params);
      const call = dialect.parse(route.op, params);
      checkBesidesFiles(x.bodyBytes, call, this.config);
      const agent = await this.catalog.resolve(t.tenantId, agentId);
      if (!agent) throw DomainError.notFound(`agent '${agentId}'`);
      const baseUrl = this.cards.baseUrl({ protocol: x.protocol, headers: x.req.headers });
      const outcome = await this.binding.invoke(dialect, call, { principal: t, agent, signal: abort.signal, baseUrl });
      const taskId = outcome.kind === 'stream' ? outcome.stream.task.id : restTaskIdOf(outcome.result);
      if (taskId) {
        line.task_id = taskId;
        annotateActiveSpan({ 'a2a.task_id': taskId });
      }
      // A null result (v0.3's push-config delete, as on JSON-RPC) is no content on REST, like an undefined one.
      if (outcome.kind === 'stream') {
        releaseOnClose(res, outcome.stream.release);
        await this.stream(x, dialect, outcome.stream, abort);
      } else if (outcome.result === undefined || outcome.result === null) x.empty(204);
      else x.send(200, contentType(dialect), JSON.stringify(outcome.result));
    } catch (err) {
      this.refuse(x, err, dialect);
    } finally {
      res.off('close', onClose);
      release();
    }
  }

  /** §11.7: `data:` frames of StreamResponse objects; a failure after the first frame is an `error` event. */
  private async stream(
    x: HttpExchange,
    dialect: WireDialect,
    stream: A2aStream,
    abort: AbortController,
  ): Promise<void> {
    async function* frames() {
      for await (const item of stream.items) {
        const frame = dialect.streamItem(item, stream.task);
        if (frame === undefined) continue;
        yield { id: item.type === 'task' ? item.task.lastSeq : item.event.seq, data: frame };
      }
    }
    await writeSse(x.res, frames(), {
      heartbeatMs: this.config.sseHeartbeatMs,
      abort,
      headers: x.headers(),
      onError: (err) => ({
        event: 'error',
        data: toRestError(err, (e) =>
          this.logger.error({ err: safeError(e), request_id: x.id }, 'HTTP+JSON stream failed'),
        ).body,
      }),
    });
  }
}

/** The task a REST result is about, for the log line and the span: `{ task }` (send), a task (get, cancel), or a message. */
function restTaskIdOf(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as { id?: unknown; taskId?: unknown; task?: { id?: unknown }; message?: { taskId?: unknown } };
  const id = r.task?.id ?? r.message?.taskId ?? r.taskId ?? ('contextId' in r ? r.id : undefined);
  return typeof id === 'string' ? id : undefined;
}
